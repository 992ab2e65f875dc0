from rest_framework import serializers
from stackselect_domain.speculative import (
    MAX_DRAFT_TOKENS,
    SPECULATIVE_METHODS,
    Speculative,
    SpeculativeError,
)

from apps.benchmarks.choices import PlanMode, RunMode
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt
from apps.benchmarks.plan_identity import (
    ATTEMPTS_HELP,
    DEFAULT_MAX_PROBES,
    ERROR_RATE_HELP,
    EVALUATION_NAME,
    GREEDY,
    MAX_LOAD_POINTS,
    MAX_REQUEST_COUNT,
    MAX_TEMPERATURE,
    WINDOW_HELP,
)


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
    mode = serializers.ChoiceField(
        source="plan.run_mode",
        choices=RunMode.choices,
        read_only=True,
        help_text="measured: the stack's own engine; simulated: a dry run on the simulator.",
    )
    engine_adapter = serializers.SerializerMethodField(help_text="The adapter the runner runs.")

    class Meta:
        model = BenchmarkJob
        fields = [
            "id",
            "plan",
            "candidate",
            "mode",
            "stack",
            "engine_adapter",
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

    def get_engine_adapter(self, job: BenchmarkJob) -> str | None:
        return job.engine.get("adapter")


class PlanSerializer(serializers.ModelSerializer):
    jobs = JobSerializer(many=True, read_only=True)
    mode = serializers.ChoiceField(source="run_mode", choices=RunMode.choices, read_only=True)
    load_mode = serializers.ChoiceField(source="mode", choices=PlanMode.choices, read_only=True)
    speculative = serializers.SerializerMethodField(
        help_text="{method, draft_model, num_tokens} every candidate speculates with; null: off."
    )
    temperature = serializers.SerializerMethodField(
        help_text="The sampling temperature every request asks for; null: none is sent, each "
        "engine samples at its own default (so do plans made before plans chose one)."
    )

    class Meta:
        model = BenchmarkPlan
        fields = [
            "id",
            "title",
            "selection",
            "mode",
            "load_mode",
            "speculative",
            "temperature",
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

    def get_speculative(self, plan: BenchmarkPlan) -> dict | None:
        return plan.identity.get("speculative")

    def get_temperature(self, plan: BenchmarkPlan) -> float | None:
        return plan.temperature


class LoadPointIn(serializers.Serializer):
    rate_rps = serializers.FloatField(required=False, min_value=0)
    concurrency = serializers.IntegerField(required=False, min_value=1)


class SpeculativeIn(serializers.Serializer):
    """Speculative decoding for every candidate: checked by stackselect_domain.speculative, the
    rule the runner parses the job's engine options with."""

    method = serializers.CharField(
        help_text=f"One of {', '.join(SPECULATIVE_METHODS)}; draft, eagle and eagle3 need a "
        "draft model."
    )
    draft_model = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text="The draft checkpoint (draft, eagle, eagle3); empty for mtp and ngram.",
    )
    num_tokens = serializers.IntegerField(
        help_text=f"Draft tokens proposed per step, 1 to {MAX_DRAFT_TOKENS}."
    )

    def validate(self, attrs: dict) -> Speculative:
        try:
            return Speculative.from_dict(attrs)
        except SpeculativeError as error:
            raise serializers.ValidationError({error.field or "method": [error.message]}) from error


class PlanCreateIn(serializers.Serializer):
    """Defaults follow the plan form; empty load_points means half, once and twice the goal.

    `mode` is measured (the stacks' own engines, the default) or simulated (a dry run);
    `load_mode` is fixed load points or a max-rate search.
    """

    selection = serializers.IntegerField()
    title = serializers.CharField(required=False, allow_blank=True, default="")
    mode = serializers.ChoiceField(choices=RunMode.choices, default=RunMode.MEASURED)
    load_mode = serializers.ChoiceField(choices=PlanMode.choices, default=PlanMode.FIXED)
    load_points = LoadPointIn(many=True, required=False, default=list)
    request_count = serializers.IntegerField(min_value=1, max_value=MAX_REQUEST_COUNT, default=200)
    seed = serializers.IntegerField(min_value=0, default=0)
    warmup_requests = serializers.IntegerField(min_value=0, max_value=1000, default=4)
    measurement_window_s = serializers.FloatField(min_value=1, default=120.0, help_text=WINDOW_HELP)
    max_error_rate = serializers.FloatField(
        min_value=0, max_value=1, default=0.05, help_text=ERROR_RATE_HELP
    )
    max_attempts = serializers.IntegerField(
        min_value=1, max_value=10, default=3, help_text=ATTEMPTS_HELP
    )
    request_timeout_s = serializers.FloatField(min_value=1, default=120.0)
    endpoint = serializers.ChoiceField(choices=["completions", "chat"], default="completions")
    temperature = serializers.FloatField(
        min_value=0,
        max_value=MAX_TEMPERATURE,
        allow_null=True,
        default=GREEDY,
        help_text="Sampling temperature every request asks for; 0 (the default) is greedy "
        "decoding; null sends none, so each engine samples at its own default.",
    )
    max_probes = serializers.IntegerField(
        min_value=1, max_value=MAX_LOAD_POINTS, default=DEFAULT_MAX_PROBES
    )
    tuning_sweep = serializers.BooleanField(
        default=False,
        help_text="Run each candidate at its engine defaults, each documented recommendation "
        "for the workload's class and the tuning_values grid; the best under the SLO is kept.",
    )
    tuning_values = serializers.DictField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=1)),
        required=False,
        default=dict,
        help_text='e.g. {"max_num_seqs": [16, 64], "max_num_batched_tokens": [2048]}',
    )
    quality_probe = serializers.BooleanField(
        default=True, help_text="Run the output-quality probe after the load points."
    )
    evaluation = serializers.RegexField(
        EVALUATION_NAME,
        required=False,
        default="",
        allow_blank=True,
        help_text="Name of an evaluation command registered on the runner (its score is stored).",
    )
    speculative = SpeculativeIn(
        required=False,
        allow_null=True,
        default=None,
        help_text="Speculative decoding for every candidate, e.g. "
        '{"method": "eagle3", "draft_model": "org/EAGLE3-head", "num_tokens": 3}; '
        "a candidate whose engine cannot speculate that way is refused by name.",
    )

    def to_internal_value(self, data):
        """A load mode sent as `mode` (the field's old meaning) is named, not just refused."""
        mode = data.get("mode") if hasattr(data, "get") else None
        if mode in PlanMode.values:
            raise serializers.ValidationError(
                {"mode": f"mode is measured or simulated; send {mode!r} as load_mode."}
            )
        return super().to_internal_value(data)

    def plan_options(self) -> dict:
        """The validated values as PlanOptions keywords (mode -> run_mode, load_mode -> mode)."""
        values = dict(self.validated_data)
        del values["selection"], values["title"]
        values["run_mode"], values["mode"] = values.pop("mode"), values.pop("load_mode")
        values["load_points"] = tuple(dict(point) for point in values["load_points"])
        return values
