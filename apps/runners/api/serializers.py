"""Input and output shapes of the runner API (docs/runner-protocol.md), for validation and the
schema."""

from rest_framework import serializers
from stackselect_domain.attempts import FINISH_STATES


class ProbeField(serializers.JSONField):
    """The probe document; the service checks the fields routing relies on."""


class EnrollIn(serializers.Serializer):
    token = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=80)
    probe = ProbeField()


class RunnerSetupOut(serializers.Serializer):
    runner_id = serializers.IntegerField()
    labels = serializers.JSONField()
    queues = serializers.ListField(child=serializers.CharField())
    heartbeat_interval_s = serializers.IntegerField()
    lease_seconds = serializers.IntegerField()
    broker_url = serializers.CharField()
    broker_transport_options = serializers.JSONField()


class EnrollOut(RunnerSetupOut):
    credential = serializers.CharField(help_text="Shown once; store it in a 0600 file.")


class ProbeIn(serializers.Serializer):
    probe = ProbeField()


class ProgressIn(serializers.Serializer):
    """Where the attempt is: `done` of `total` requests of load point `load_point`."""

    load_point = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    done = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    total = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    message = serializers.CharField(required=False, allow_blank=True, max_length=500)

    def validate(self, attrs: dict) -> dict:
        done, total = attrs.get("done"), attrs.get("total")
        if done is not None and total is not None and done > total:
            raise serializers.ValidationError({"done": "Must not be above total."})
        return attrs


class AttemptBeatIn(serializers.Serializer):
    attempt_id = serializers.IntegerField(min_value=1)
    progress = ProgressIn(required=False, allow_null=True)


class HeartbeatIn(serializers.Serializer):
    """`attempts` lists every attempt the runner holds; `attempt_id` is the one-job form."""

    attempt_id = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    progress = ProgressIn(required=False, allow_null=True)
    attempts = AttemptBeatIn(many=True, required=False, max_length=64)

    def validate_attempts(self, value: list[dict]) -> list[dict]:
        ids = [entry["attempt_id"] for entry in value]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError("Each attempt may appear once.")
        return value


class AttemptBeatOut(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    cancel = serializers.BooleanField()
    lease_expires_at = serializers.DateTimeField(allow_null=True)


class HeartbeatOut(serializers.Serializer):
    cancel = serializers.BooleanField()
    lease_expires_at = serializers.DateTimeField(allow_null=True)
    queues = serializers.ListField(child=serializers.CharField())
    attempts = AttemptBeatOut(many=True)


class JobSpecOut(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    job_id = serializers.IntegerField()
    plan_id = serializers.IntegerField()
    identity = serializers.JSONField()
    identity_fingerprint = serializers.CharField()
    stack = serializers.JSONField()
    engine = serializers.JSONField()
    harness = serializers.JSONField()
    requests = serializers.JSONField()
    load_points = serializers.JSONField()
    search = serializers.JSONField(allow_null=True)
    measurement_window_s = serializers.FloatField()
    failure_policy = serializers.JSONField()


class AttemptStateOut(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    state = serializers.CharField()
    job_state = serializers.CharField()
    cancel = serializers.BooleanField()


class LogIn(serializers.Serializer):
    offset = serializers.IntegerField(min_value=0)
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)


class LogOut(serializers.Serializer):
    next_offset = serializers.IntegerField()


class ResultRecordIn(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    send_s = serializers.FloatField()
    ttft_s = serializers.FloatField(allow_null=True)
    itl_s = serializers.ListField(child=serializers.FloatField())
    e2e_s = serializers.FloatField(allow_null=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    status = serializers.IntegerField(allow_null=True, required=False)


class ResultsIn(serializers.Serializer):
    """Sent gzip-compressed (`Content-Encoding: gzip`) with an `Idempotency-Key` header."""

    load_point_index = serializers.IntegerField(min_value=0)
    load_point = serializers.JSONField()
    started_at = serializers.CharField()
    duration_s = serializers.FloatField()
    chunk_index = serializers.IntegerField(min_value=0)
    chunk_count = serializers.IntegerField(min_value=1)
    engine = serializers.JSONField()
    harness = serializers.JSONField()
    records = ResultRecordIn(many=True)


class ResultUploadOut(serializers.Serializer):
    upload_id = serializers.IntegerField(source="pk")
    idempotency_key = serializers.CharField()
    load_point_index = serializers.IntegerField()
    chunk_index = serializers.IntegerField()
    chunk_count = serializers.IntegerField()
    record_count = serializers.IntegerField()
    sha256 = serializers.CharField()
    summary = serializers.JSONField()
    received_at = serializers.DateTimeField()


class FinishIn(serializers.Serializer):
    state = serializers.ChoiceField(choices=list(FINISH_STATES))
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class ErrorOut(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField(required=False)
    expected_offset = serializers.IntegerField(required=False)
