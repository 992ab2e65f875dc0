from rest_framework import serializers

from apps.benchmarks.choices import PlanMode
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt
from apps.benchmarks.plan_identity import DEFAULT_MAX_PROBES, MAX_LOAD_POINTS, MAX_REQUEST_COUNT


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobAttempt
        fields = [
            "id",
            "number",
            "runner",
            "queue",
            "state",
            "reason",
            "lease_expires_at",
            "dispatched_at",
            "claimed_at",
            "started_at",
            "finished_at",
        ]


class JobSerializer(serializers.ModelSerializer):
    attempts = AttemptSerializer(many=True, read_only=True)

    class Meta:
        model = BenchmarkJob
        fields = [
            "id",
            "plan",
            "candidate",
            "stack",
            "accelerator",
            "gpu_count",
            "state",
            "state_reason",
            "cancel_requested",
            "progress",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
        ]


class PlanSerializer(serializers.ModelSerializer):
    jobs = JobSerializer(many=True, read_only=True)

    class Meta:
        model = BenchmarkPlan
        fields = [
            "id",
            "title",
            "selection",
            "mode",
            "state",
            "identity",
            "identity_fingerprint",
            "load_points",
            "search",
            "max_attempts",
            "created_at",
            "finished_at",
            "jobs",
        ]


class LoadPointIn(serializers.Serializer):
    rate_rps = serializers.FloatField(required=False, min_value=0)
    concurrency = serializers.IntegerField(required=False, min_value=1)


class PlanCreateIn(serializers.Serializer):
    """Defaults follow the plan form; empty load_points means half, once and twice the goal."""

    selection = serializers.IntegerField()
    title = serializers.CharField(required=False, allow_blank=True, default="")
    mode = serializers.ChoiceField(choices=PlanMode.choices, default=PlanMode.FIXED)
    load_points = LoadPointIn(many=True, required=False, default=list)
    request_count = serializers.IntegerField(min_value=1, max_value=MAX_REQUEST_COUNT, default=200)
    seed = serializers.IntegerField(min_value=0, default=0)
    warmup_requests = serializers.IntegerField(min_value=0, max_value=1000, default=4)
    measurement_window_s = serializers.FloatField(min_value=1, default=120.0)
    max_error_rate = serializers.FloatField(min_value=0, max_value=1, default=0.05)
    max_attempts = serializers.IntegerField(min_value=1, max_value=10, default=3)
    request_timeout_s = serializers.FloatField(min_value=1, default=120.0)
    endpoint = serializers.ChoiceField(choices=["completions", "chat"], default="completions")
    max_probes = serializers.IntegerField(
        min_value=1, max_value=MAX_LOAD_POINTS, default=DEFAULT_MAX_PROBES
    )
