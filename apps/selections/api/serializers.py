"""The public shape of a goal (POST /api/v1/selections/), candidates and the estimate endpoint.

Validation is strict: unknown catalog slugs, impossible numbers and inconsistent arrival
settings are 400s whose keys follow the document's nesting (workload.isl.mean, ...).
"""

from __future__ import annotations

from typing import Any

from django.template.defaultfilters import pluralize
from rest_framework import serializers
from stackselect_domain.quality import DEFAULT_QUALITY_TOLERANCE
from stackselect_domain.vocabulary import (
    ARRIVAL_PROCESSES,
    KV_DTYPES,
    LENGTH_KINDS,
    PRECISION_WORDS,
)
from stackselect_domain.words import grouped
from stackselect_domain.workload import MAX_TOKENS, parse_length

from apps.catalog.choices import AttentionKind, EngineKind, Maturity, PublishedScenario
from apps.catalog.models import Accelerator, Engine, Feature, KernelBackend, ModelSpec
from apps.catalog.selectors import NEAREST_LIMIT
from apps.core.pagination import MAX_PAGE
from apps.core.suggest import WordChoiceField, did_you_mean
from apps.selections import selectors
from apps.selections.catalog_adapter import custom_model_spec, model_arch
from apps.selections.choices import ComputeState, OperationalNeed
from apps.selections.models import Selection
from apps.selections.slo_presets import preset_choices

MIN_MATURITIES = (Maturity.STABLE, Maturity.BETA, Maturity.EXPERIMENTAL)
MAX_GPUS = 64
# A goal's rate (req/s) or clients: far past any deployment, a bound that keeps sizing figures
# meaningful (a billion clients would be sized at millions of GPUs).
MAX_GOAL_LOAD = 1_000_000
MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 100


class CatalogSlugField(serializers.CharField):
    """A slug that must name a row of a catalog model; stays a string in the document."""

    def __init__(self, *, model: type, slug_field: str = "slug", **kwargs: Any) -> None:
        self.model = model
        self.slug_field = slug_field
        super().__init__(max_length=80, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        known = self.model.objects.values_list(self.slug_field, flat=True)
        if not known.filter(**{self.slug_field: value}).exists():
            label = self.model._meta.verbose_name
            hint = did_you_mean(value, known)
            raise serializers.ValidationError(
                f"No {label} in the catalog is called {value!r}.{hint}"
            )
        return value


class PrecisionListField(serializers.ListField):
    """One precision word or a list of them (each is enumerated); always stored as a list."""

    child = WordChoiceField(choices=PRECISION_WORDS)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_length=1, max_length=4, **kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        return super().to_internal_value([data] if isinstance(data, str) else data)

    def to_representation(self, data: Any) -> list[str]:
        """A goal stored with one word (not a list) reads back as that word, not its letters."""
        return super().to_representation([data] if isinstance(data, str) else data)


class LengthSerializer(serializers.Serializer):
    kind = WordChoiceField(choices=LENGTH_KINDS)
    value = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS, required=False)
    mean = serializers.FloatField(min_value=1, max_value=MAX_TOKENS, required=False)
    std = serializers.FloatField(min_value=0, required=False)
    median = serializers.FloatField(min_value=1, max_value=MAX_TOKENS, required=False)
    sigma = serializers.FloatField(min_value=0, required=False)
    min = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS, required=False)
    max = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS, required=False)
    values = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_TOKENS),
        required=False,
        max_length=100_000,
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            parse_length(attrs, "length")
        except ValueError as error:
            raise _field_error(error) from error
        return attrs


def _field_error(error: ValueError) -> serializers.ValidationError:
    """A core's "where.field: message" ValueError as a 400 on that field."""
    field, _, message = str(error).partition(": ")
    return serializers.ValidationError({field.split(".")[-1]: message or field})


class ArrivalSerializer(serializers.Serializer):
    process = WordChoiceField(choices=ARRIVAL_PROCESSES, required=False)
    rate_rps = serializers.FloatField(
        min_value=0.0001,
        max_value=MAX_GOAL_LOAD,
        required=False,
        help_text="The whole deployment's mean arrival rate, requests per second.",
    )
    concurrency = serializers.IntegerField(
        min_value=1,
        max_value=MAX_GOAL_LOAD,
        required=False,
        help_text="Clients of a closed loop, each sending its next request when the last ends.",
    )
    burstiness = serializers.FloatField(
        min_value=0.01,
        required=False,
        help_text="Gamma shape k of the gaps: 1 is Poisson, below 1 burstier.",
    )
    peak_factor = serializers.FloatField(min_value=1, max_value=100, required=False)
    trace = serializers.IntegerField(
        min_value=1, required=False, help_text="Id of a trace of your team, for process trace."
    )
    speedup = serializers.FloatField(
        min_value=0.001,
        max_value=1000,
        required=False,
        help_text="Trace replay only: 2 replays the trace twice as fast (default 1).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("process") == "trace":
            return self._trace_replay(attrs)
        if "trace" in attrs or "speedup" in attrs:
            raise serializers.ValidationError({"trace": "Only a trace process replays a trace."})
        has_rate, has_concurrency = "rate_rps" in attrs, "concurrency" in attrs
        if has_rate == has_concurrency:
            message = "Give exactly one of rate_rps (open loop) and concurrency (closed loop)."
            raise serializers.ValidationError({"rate_rps": message})
        if has_rate and "process" not in attrs:
            raise serializers.ValidationError({"process": "An arrival rate needs a process."})
        if attrs.get("process") == "gamma" and "burstiness" not in attrs:
            raise serializers.ValidationError({"burstiness": "A gamma process needs it."})
        return attrs

    def _trace_replay(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The trace sets the rate (times speedup), and it must be one of the team's traces."""
        if "rate_rps" in attrs or "concurrency" in attrs:
            message = "A replayed trace sets its own rate: use speedup to scale it."
            raise serializers.ValidationError({"rate_rps": message})
        if "trace" not in attrs:
            raise serializers.ValidationError({"trace": "A trace process needs a trace id."})
        team = self.context.get("team")
        if selectors.team_trace(team=team, trace_id=attrs["trace"]) is None:
            message = f"Your team has no trace {attrs['trace']}."
            raise serializers.ValidationError({"trace": message})
        return {**attrs, "speedup": attrs.get("speedup", 1.0)}


class CustomModelSerializer(serializers.Serializer):
    """An architecture the catalog lacks, with the estimator's field names."""

    name = serializers.CharField(max_length=120)
    architecture = CatalogSlugField(
        model=Feature,
        slug_field="key",
        help_text="The arch_* feature key engines must support, e.g. arch_llama.",
    )
    checkpoint = serializers.CharField(max_length=200, required=False, allow_blank=True)
    native_dtype = serializers.ChoiceField(choices=("bf16", "fp16"), required=False)
    params_total_b = serializers.FloatField(min_value=0.001, max_value=10_000)
    params_active_b = serializers.FloatField(min_value=0.001, max_value=10_000)
    layers = serializers.IntegerField(min_value=1, max_value=1000)
    hidden_size = serializers.IntegerField(min_value=1)
    attention_heads = serializers.IntegerField(min_value=1)
    kv_heads = serializers.IntegerField(min_value=1)
    head_dim = serializers.IntegerField(min_value=1)
    attention_kind = serializers.ChoiceField(choices=AttentionKind.choices)
    sliding_window = serializers.IntegerField(min_value=1, required=False)
    sliding_window_layers = serializers.IntegerField(min_value=1, required=False)
    kv_lora_rank = serializers.IntegerField(min_value=1, required=False)
    qk_rope_head_dim = serializers.IntegerField(min_value=1, required=False)
    experts_total = serializers.IntegerField(min_value=0, required=False)
    experts_active = serializers.IntegerField(min_value=0, required=False)
    max_context = serializers.IntegerField(min_value=1, required=False)
    vocab_size = serializers.IntegerField(min_value=1, required=False)

    def validate_architecture(self, value: str) -> str:
        if not value.startswith("arch_"):
            raise serializers.ValidationError("Name an arch_* feature, e.g. arch_llama.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The estimator's own checks (kv_heads divides the heads, MLA ranks, ...)."""
        try:
            model_arch(custom_model_spec(attrs))
        except ValueError as error:
            raise _field_error(error) from error
        return attrs


class WorkloadSerializer(serializers.Serializer):
    model = CatalogSlugField(
        model=ModelSpec, required=False, help_text="Catalog slug; or give custom_model instead."
    )
    custom_model = CustomModelSerializer(required=False)
    precision = PrecisionListField()
    kv_dtype = WordChoiceField(choices=KV_DTYPES, required=False, allow_blank=True)
    isl = LengthSerializer()
    osl = LengthSerializer()
    arrival = ArrivalSerializer()
    prefix_share = serializers.FloatField(min_value=0, max_value=1, default=0.0)
    prefix_tokens = serializers.IntegerField(min_value=0, default=0)
    multi_turn = serializers.BooleanField(default=False)
    tool_share = serializers.FloatField(min_value=0, max_value=1, default=0.0)
    max_context = serializers.IntegerField(
        min_value=1, max_value=MAX_TOKENS, required=False, allow_null=True
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("model" in attrs) == ("custom_model" in attrs):
            message = "Name a catalog model or describe a custom_model, not both."
            raise serializers.ValidationError({"model": message})
        prefix = _prefix_errors(
            attrs["prefix_share"], attrs["prefix_tokens"], _stated_bound(attrs["isl"])
        )
        errors = _context_errors(attrs) or {**_max_context_errors(attrs), **prefix}
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def _model_context(attrs: dict[str, Any]) -> tuple[str, int | None]:
    """The model's name and the longest context it takes (None when not recorded)."""
    if "custom_model" in attrs:
        custom = attrs["custom_model"]
        return custom.get("name", "the custom model"), custom.get("max_context")
    row = ModelSpec.objects.filter(slug=attrs["model"]).values("name", "max_context").first()
    return (row["name"], row["max_context"]) if row else (attrs["model"], None)


def _longest(length: dict[str, Any]) -> float:
    """The largest token count a length description states (a fixed value, a mean or median,
    a maximum or the longest listed value)."""
    stated = [length.get(key) for key in ("value", "mean", "median", "max")]
    stated.append(max(length.get("values") or [0]))
    return max(value for value in stated if value is not None)


def _exceeds(limit: int, name: str) -> str:
    return f"exceeds the {grouped(limit)}-token context of {name}"


def _stated_bound(length: dict[str, Any]) -> int | None:
    """The longest length a description allows: a fixed value, a stated maximum or the longest
    listed value; None for an unbounded distribution."""
    if "value" in length:
        return length["value"]
    if "max" in length:
        return length["max"]
    return max(length["values"]) if length.get("values") else None


def _prefix_errors(share: float, tokens: int, longest: int | None) -> dict[str, Any]:
    """A shared prefix needs a length, and it is the start of a prompt, so it cannot be longer
    than every prompt (the generator would lengthen those prompts to hold it, and simulate
    another workload)."""
    if share <= 0:
        return {}
    if tokens < 1:
        return {"prefix_tokens": ["A shared prefix needs its length when prefix_share is above 0."]}
    if longest is not None and tokens > longest:
        message = (
            f"The shared prefix ({grouped(tokens)} tokens) is longer than any prompt "
            f"({grouped(longest)} token{pluralize(longest)} at most); it is the start of a prompt."
        )
        return {"prefix_tokens": [message]}
    return {}


def _max_context_errors(attrs: dict[str, Any]) -> dict[str, Any]:
    """The goal's maximum context is the longest request it must hold, so it cannot be below a
    request the length bounds allow (the memory checks would size for less than it sends)."""
    isl, osl = _stated_bound(attrs["isl"]), _stated_bound(attrs["osl"])
    stated = attrs.get("max_context")
    if not stated or isl is None or osl is None:
        return {}
    longest = isl + osl
    if stated >= longest:
        return {}
    message = (
        f"The maximum context ({grouped(stated)} tokens) is below the longest request the "
        f"lengths allow ({grouped(longest)} tokens of input and output)."
    )
    return {"max_context": [message]}


def _context_errors(attrs: dict[str, Any]) -> dict[str, Any]:
    """Lengths past the model's context window: caught at entry, not dropped later as
    memory_insufficient."""
    name, limit = _model_context(attrs)
    if not limit:
        return {}
    errors: dict[str, Any] = {}
    too_long = _exceeds(limit, name)
    for side, key in (("isl", "input"), ("osl", "output")):
        length = attrs[side]
        if _longest(length) > limit:
            field = next(k for k in ("value", "mean", "median", "max", "values") if k in length)
            errors[side] = {field: [f"The {key} length {too_long}."]}
    total = _longest(attrs["isl"]) + _longest(attrs["osl"])
    if not errors and total > limit:
        field = next(k for k in ("value", "mean", "median", "max", "values") if k in attrs["osl"])
        errors["osl"] = {field: [f"Input plus output ({grouped(total)} tokens) {too_long}."]}
    if attrs.get("max_context") and attrs["max_context"] > limit:
        errors["max_context"] = [f"The maximum context {too_long}."]
    if attrs["prefix_tokens"] > limit:
        errors["prefix_tokens"] = [f"The shared prefix {too_long}."]
    return errors


DAY_MS = 86_400_000


def _target_ms() -> serializers.FloatField:
    """A latency target: above zero and at most a day (a longer one targets nothing; leave it
    out instead)."""
    return serializers.FloatField(
        min_value=0.001,
        max_value=DAY_MS,
        required=False,
        allow_null=True,
        error_messages={
            "max_value": f"At most a day ({DAY_MS:,} ms); leave it empty for no target."
        },
    )


class SloSerializer(serializers.Serializer):
    ttft_ms = _target_ms()
    tpot_ms = _target_ms()
    e2e_ms = _target_ms()
    percentile = serializers.FloatField(min_value=1, max_value=100, default=99.0)
    attainment = serializers.FloatField(min_value=0.01, max_value=1, default=0.99)
    preset = serializers.ChoiceField(
        choices=preset_choices(),
        required=False,
        allow_blank=True,
        help_text="The published SLO preset the targets started from (they may be edited since).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if all(attrs.get(name) is None for name in ("ttft_ms", "tpot_ms", "e2e_ms")):
            message = "Set at least one of ttft_ms, tpot_ms and e2e_ms."
            raise serializers.ValidationError({"ttft_ms": message})
        ttft, e2e = attrs.get("ttft_ms"), attrs.get("e2e_ms")
        if ttft is not None and e2e is not None and e2e < ttft:
            message = (
                f"The end-to-end target ({e2e:g} ms) is below the TTFT target ({ttft:g} ms); a "
                "request's end-to-end time includes its first token."
            )
            raise serializers.ValidationError({"e2e_ms": message})
        if not attrs.get("preset"):
            attrs.pop("preset", None)
        return attrs


class RequiredFeatureSerializer(serializers.Serializer):
    feature = CatalogSlugField(model=Feature, slug_field="key")
    min_maturity = serializers.ChoiceField(choices=MIN_MATURITIES)


class ConstraintsSerializer(serializers.Serializer):
    accelerators = serializers.ListField(
        child=serializers.CharField(max_length=80),
        default=list,
        help_text=(
            "Allowed accelerators by slug, or a vendor word (nvidia, amd, cpu, ...) for all of "
            "that vendor's; empty means every accelerator in the catalog."
        ),
    )
    max_gpus = serializers.IntegerField(min_value=1, max_value=MAX_GPUS, default=8)
    required_features = RequiredFeatureSerializer(many=True, default=list)
    operational = serializers.ListField(
        child=serializers.ChoiceField(choices=OperationalNeed.choices), default=list
    )
    prices = serializers.DictField(
        child=serializers.FloatField(min_value=0.0001),
        default=dict,
        help_text="USD per GPU-hour by accelerator slug.",
    )
    quality_tolerance = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=DEFAULT_QUALITY_TOLERANCE,
        help_text=(
            "How far below the reference candidate's quality-probe correctness (a share, "
            "0 to 1) a faster candidate may score before it is flagged 'faster but worse'."
        ),
    )

    def validate_accelerators(self, names: list[str]) -> list[str]:
        """Slugs stay; a vendor word becomes the slugs of that vendor's accelerators."""
        rows = list(Accelerator.objects.values_list("slug", "vendor"))
        slugs: list[str] = []
        errors: dict[str, list[str]] = {}
        for index, name in enumerate(names):
            matched = [slug for slug, vendor in rows if name in (slug, vendor)]
            if not matched:
                hint = did_you_mean(name, [slug for slug, _ in rows])
                message = f"No accelerator in the catalog is called {name!r}, nor any vendor.{hint}"
                errors[str(index)] = [message]
            slugs += [slug for slug in matched if slug not in slugs]
        if errors:
            raise serializers.ValidationError(errors)
        return slugs

    def validate_prices(self, prices: dict[str, float]) -> dict[str, float]:
        known = set(
            Accelerator.objects.filter(slug__in=list(prices)).values_list("slug", flat=True)
        )
        unknown = sorted(set(prices) - known)
        if unknown:
            raise serializers.ValidationError(f"Unknown accelerators: {', '.join(unknown)}.")
        return prices


class SelectionInputSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=160)
    workload = WorkloadSerializer()
    slo = SloSerializer()
    constraints = ConstraintsSerializer(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.setdefault("constraints", ConstraintsSerializer().to_internal_value({}))
        return attrs


class SelectionSerializer(serializers.ModelSerializer):
    workload = WorkloadSerializer()
    slo = SloSerializer()
    constraints = ConstraintsSerializer()

    class Meta:
        model = Selection
        fields = ["id", "title", "state", "created_at", "updated_at", "workload", "slo"]
        fields += ["constraints"]
        read_only_fields = fields


class StackSerializer(serializers.Serializer):
    engine = serializers.CharField()
    engine_version = serializers.CharField()
    backend = serializers.CharField(allow_null=True)
    backends = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Every kernel backend the catalog cannot tell apart for this stack.",
    )
    accelerator = serializers.CharField()
    gpu_count = serializers.IntegerField()
    tp = serializers.IntegerField()
    pp = serializers.IntegerField()
    ep = serializers.IntegerField()
    dp = serializers.IntegerField()
    precision = serializers.CharField()
    layers = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Orchestrator or KV layers on top of the engine, as 'slug version'.",
    )


class ReasonSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class PublishedSourceSerializer(serializers.Serializer):
    name = serializers.CharField()
    url = serializers.URLField()
    licence = serializers.CharField()
    as_of = serializers.DateField(help_text="When we read the source.")
    row = serializers.CharField(help_text="The row's id within its source.")


class EngineBatchSerializer(serializers.Serializer):
    batch_size = serializers.IntegerField(
        help_text="The engine's batch per attention rank the source states."
    )
    clients_per_rank = serializers.IntegerField(
        help_text="The row's clients split over its attention data-parallel ranks."
    )
    holds_clients = serializers.BooleanField(
        help_text="False: the engine capped its batch below the clients, whose other requests "
        "waited inside it, a queue no method here models; read the row with care."
    )
    note = serializers.CharField()


class PromptLoadSerializer(serializers.Serializer):
    share_of_peak = serializers.FloatField(
        help_text="The least share of the row's GPUs' dense peak its own figures imply were "
        "spent on prompt tokens: clients / (TTFT + (OSL - 1) x TPOT) x ISL x 2 x active "
        "parameters, attention left out (docs/predictions.md)."
    )
    beyond_assumed = serializers.BooleanField(
        help_text="More than the share of peak the roofline assumes: no method here "
        "reproduces the row from a cold cache; read it with care."
    )
    note = serializers.CharField()


class PublishedRowSerializer(serializers.Serializer):
    """One published measurement: someone else's figures under their conditions."""

    evidence = serializers.ChoiceField(choices=["published"], help_text="Never the team's own.")
    ttft_ms = serializers.FloatField(
        allow_null=True, help_text="Measured by the source; null when it published none."
    )
    tpot_ms = serializers.FloatField(
        allow_null=True, help_text="Measured by the source; null when it published none."
    )
    throughput_tokens_s = serializers.FloatField(
        allow_null=True, help_text="Output tokens/s as published; null when not given."
    )
    output_tokens_s_per_gpu = serializers.FloatField(
        allow_null=True, help_text="Output tokens/s per GPU as published; null when not given."
    )
    scenario = serializers.ChoiceField(
        choices=PublishedScenario.choices,
        help_text="How the source loaded the engine: a fixed number of clients, or every "
        "request queued at once (maximum load, where `concurrency` is null).",
    )
    model = serializers.CharField()
    checkpoint = serializers.CharField()
    accelerator = serializers.CharField()
    engine = serializers.CharField()
    engine_version = serializers.CharField(allow_blank=True)
    precision = serializers.CharField()
    mode = serializers.ChoiceField(choices=["agg", "disagg"])
    tp = serializers.IntegerField(allow_null=True)
    ep = serializers.IntegerField(allow_null=True)
    pp = serializers.IntegerField(allow_null=True)
    dp = serializers.IntegerField(allow_null=True)
    isl = serializers.IntegerField()
    osl = serializers.IntegerField()
    concurrency = serializers.IntegerField(allow_null=True)
    measured_on = serializers.DateField(allow_null=True)
    source = PublishedSourceSerializer()
    held_out = serializers.BooleanField(
        help_text="Held out of every fit (the error bands are measured on such rows)."
    )
    fit_use = serializers.CharField(help_text="Whether a fitted factor may have used the row.")
    prompt_load = PromptLoadSerializer(
        allow_null=True,
        help_text="Whether the row's figures add up; null where they cannot tell (a "
        "disaggregated row, no clients, no TTFT or TPOT, or no peak in the catalog).",
    )
    engine_batch = EngineBatchSerializer(
        allow_null=True,
        help_text="The engine batch the row states beside its clients; null where it states "
        "no batch or no clients.",
    )
    distance = serializers.FloatField(help_text="The ranking distance (docs/predictions.md).")
    near = serializers.BooleanField(
        help_text="The stack's accelerator, engine and precision, and lengths, layout and load "
        "within about four doublings in all (distance under 4): a check of the prediction. A "
        "row not near is context only."
    )
    differences = serializers.ListField(
        child=serializers.CharField(), help_text="How its conditions differ from the request's."
    )


class KeptCandidateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    rank = serializers.IntegerField()
    stack = StackSerializer()
    score = serializers.FloatField(allow_null=True)
    estimate = serializers.JSONField()
    hints = ReasonSerializer(many=True)
    capability_ids = serializers.ListField(child=serializers.IntegerField())
    chosen = serializers.BooleanField()
    published = PublishedRowSerializer(
        many=True,
        source="published_rows",
        help_text="The nearest published measurements of the goal's model to this stack and "
        f"goal (at most {NEAREST_LIMIT}, closest first): other people's figures, never the team's "
        "own.",
    )


class DroppedCandidateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    stack = StackSerializer()
    reasons = ReasonSerializer(many=True)
    capability_ids = serializers.ListField(child=serializers.IntegerField())


class DroppedGroupSerializer(serializers.Serializer):
    code = serializers.CharField()
    count = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.CharField())


class SimulatedShareSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(help_text="Distinct simulated replicas compared.")
    low = serializers.FloatField()
    median = serializers.FloatField()
    high = serializers.FloatField()


class CandidateListSerializer(serializers.Serializer):
    kept_count = serializers.IntegerField()
    dropped_count = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    kept = KeptCandidateSerializer(many=True)
    dropped = DroppedCandidateSerializer(many=True)
    dropped_groups = DroppedGroupSerializer(many=True)
    simulated_share = SimulatedShareSerializer(
        allow_null=True,
        help_text="When the kept list has analytic rows: each simulated replica's goodput per "
        "GPU over its own analytic figure (low, median, high). The analytic estimate queues "
        "nothing, so an analytic row's figure does not compare with a simulated row's; null "
        "when every kept row is simulated or none is.",
    )


class CandidateQuerySerializer(serializers.Serializer):
    """The candidate list's query string: each filter and page setting checked, so a bad
    value is a 400 naming it rather than a filter silently dropped."""

    engine = serializers.CharField(max_length=80, required=False, help_text="Engine slug.")
    accelerator = serializers.CharField(
        max_length=80, required=False, help_text="Accelerator slug."
    )
    precision = WordChoiceField(choices=sorted(PRECISION_WORDS), required=False)
    gpu_count = serializers.IntegerField(min_value=1, max_value=MAX_GPUS, required=False)
    layers = serializers.ChoiceField(
        choices=sorted(selectors.LAYER_CHOICES),
        required=False,
        help_text="none: the engines alone; only: stacks with a serving layer (which repeat "
        "their engine's figures).",
    )
    code = serializers.CharField(
        max_length=80, required=False, help_text="Reason code (dropped stacks only)."
    )
    page = serializers.IntegerField(min_value=1, max_value=MAX_PAGE, default=1)
    page_size = serializers.IntegerField(
        min_value=1, max_value=MAX_PAGE_SIZE, default=DEFAULT_PAGE_SIZE
    )


class CandidateChoiceSerializer(serializers.Serializer):
    chosen = serializers.ListField(child=serializers.IntegerField(min_value=1), max_length=50)


class EstimateInputSerializer(serializers.Serializer):
    model = CatalogSlugField(model=ModelSpec)
    precision = WordChoiceField(choices=PRECISION_WORDS)
    kv_dtype = WordChoiceField(choices=KV_DTYPES, required=False, allow_blank=True)
    accelerator = CatalogSlugField(model=Accelerator)
    gpu_count = serializers.IntegerField(min_value=1, max_value=MAX_GPUS)
    tp = serializers.IntegerField(min_value=1, max_value=MAX_GPUS)
    ep = serializers.IntegerField(min_value=1, max_value=MAX_GPUS, default=1)
    dp = serializers.IntegerField(
        min_value=1,
        max_value=MAX_GPUS,
        required=False,
        help_text="Default: gpu_count / (tp x pp).",
    )
    pp = serializers.IntegerField(
        min_value=1,
        max_value=MAX_GPUS,
        default=1,
        help_text="Pipeline stages: the replica keeps one micro-batch per stage in flight, and "
        "the clients and the rate split among them.",
    )
    isl = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS)
    osl = serializers.IntegerField(min_value=1, max_value=MAX_TOKENS)
    engine = CatalogSlugField(
        model=Engine,
        required=False,
        help_text="A serving engine's catalog slug: its scheduler and step-time profile apply.",
    )
    engine_version = serializers.CharField(
        max_length=40, required=False, help_text="Default: the engine's newest catalog release."
    )
    backend = CatalogSlugField(model=KernelBackend, required=False)
    concurrency = serializers.IntegerField(
        min_value=1,
        max_value=4096,
        required=False,
        help_text="Closed loop: this many clients over all gpu_count GPUs, split evenly over "
        "the dp replicas, simulated to a steady state.",
    )
    rate_rps = serializers.FloatField(
        min_value=0.001,
        max_value=100_000,
        required=False,
        help_text="Open loop: Poisson arrivals at this rate over all gpu_count GPUs, split "
        "evenly over the dp replicas, simulated to a steady state.",
    )
    tpot_ms = serializers.FloatField(min_value=0.001, max_value=DAY_MS, required=False)
    prefix_share = serializers.FloatField(
        min_value=0,
        max_value=1,
        default=0.0,
        help_text="Share of the prompts that open with one shared prefix (system prompt, RAG "
        "preamble): an engine caching prefixes computes it once and reads it from its cache "
        "after that.",
    )
    prefix_tokens = serializers.IntegerField(
        min_value=0,
        max_value=MAX_TOKENS,
        default=0,
        help_text="The shared prefix's length; required with prefix_share, at most isl.",
    )

    def validate_engine(self, value: str) -> str:
        kind = Engine.objects.get(slug=value).kind
        if kind != EngineKind.ENGINE:
            raise serializers.ValidationError(f"{value!r} is a {kind}, not a serving engine.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["gpu_count"] % attrs["tp"]:
            raise serializers.ValidationError({"tp": "tp must divide gpu_count."})
        if attrs["gpu_count"] % (attrs["tp"] * attrs["pp"]):
            raise serializers.ValidationError({"pp": "tp x pp must divide gpu_count."})
        if "concurrency" in attrs and "rate_rps" in attrs:
            raise serializers.ValidationError(
                {"rate_rps": "Give concurrency (closed loop) or rate_rps (open loop), not both."}
            )
        prefix = _prefix_errors(attrs["prefix_share"], attrs["prefix_tokens"], attrs["isl"])
        if prefix:
            raise serializers.ValidationError(prefix)
        name, limit = _model_context(attrs)
        if limit and attrs["isl"] > limit:
            raise serializers.ValidationError({"isl": f"The input length {_exceeds(limit, name)}."})
        if limit and attrs["isl"] + attrs["osl"] > limit:
            total = attrs["isl"] + attrs["osl"]
            raise serializers.ValidationError(
                {"osl": f"Input plus output ({grouped(total)} tokens) {_exceeds(limit, name)}."}
            )
        backend = attrs.get("backend")
        if backend and attrs.get("engine"):
            releases = Engine.objects.get(slug=attrs["engine"]).releases
            if not releases.filter(backends__backend__slug=backend).exists():
                raise serializers.ValidationError(
                    {"backend": f"The catalog records no {attrs['engine']} release with {backend}."}
                )
        return attrs


class PercentilesSerializer(serializers.Serializer):
    mean = serializers.FloatField()
    p50 = serializers.FloatField()
    p90 = serializers.FloatField()
    p95 = serializers.FloatField()
    p99 = serializers.FloatField()


class MetricPercentilesSerializer(serializers.Serializer):
    ttft_ms = PercentilesSerializer(allow_null=True)
    tpot_ms = PercentilesSerializer(allow_null=True)
    e2e_ms = PercentilesSerializer(allow_null=True)


class ReplicaShareSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(help_text="dp: replicas (or attention ranks) side by side.")
    gpus = serializers.IntegerField(help_text="GPUs of one replica: tp x pp.")
    concurrency = serializers.IntegerField(
        allow_null=True, help_text="One replica's clients, rounded up; null for an open loop."
    )
    rate_rps = serializers.FloatField(
        allow_null=True, help_text="One replica's arrival rate; null for a closed loop."
    )


class AnalyticFiguresSerializer(serializers.Serializer):
    ttft_ms = serializers.FloatField()
    tpot_ms = serializers.FloatField()
    e2e_ms = serializers.FloatField()
    method_label = serializers.CharField(help_text="The method of these figures.")


class ErrorBandSerializer(serializers.Serializer):
    band = serializers.JSONField(
        allow_null=True, help_text="{p10, p90} of the method's held-out relative errors, or null."
    )
    reason = serializers.CharField(allow_null=True, required=False)
    rows = serializers.IntegerField(required=False, help_text="Held-out rows the band comes from.")
    measured_on = serializers.CharField(required=False, help_text="When the band was measured.")
    source = serializers.CharField(required=False, help_text="What it was measured on.")
    measured_for = serializers.JSONField(
        allow_null=True,
        required=False,
        help_text="{engines, vendors}: the engine slugs and accelerator vendors of the rows the "
        "band was measured on; null for a band stored before scopes were recorded.",
    )
    covers_stack = serializers.BooleanField(
        allow_null=True,
        required=False,
        help_text="Whether this stack's engine and vendor are among those measured; false means "
        "the band was measured on other stacks and is no measured bound for this one; null when "
        "the request names no engine or the band records no scope.",
    )


class MetricErrorBandsSerializer(serializers.Serializer):
    ttft_ms = ErrorBandSerializer()
    tpot_ms = ErrorBandSerializer()
    e2e_ms = ErrorBandSerializer()
    throughput_rps = ErrorBandSerializer(
        required=False, help_text="Present when `throughput_rps` is: simulated figures only."
    )


class SchedulerSerializer(serializers.Serializer):
    max_num_batched_tokens = serializers.IntegerField(help_text="Tokens per engine step.")
    max_num_seqs = serializers.IntegerField(help_text="Sequences in flight per replica.")
    note = serializers.CharField(
        help_text="Where each budget comes from: the engine's default on this accelerator, its "
        "recorded default, or our fallback."
    )


class EstimateCapabilitySerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(
        choices=["recorded", "unverified"],
        help_text="recorded: a capability cell backs every need of the stack; unverified: the "
        "catalog holds no evidence either way for the needs in `reasons`. A stack the catalog "
        "records as unable to run is refused with a 400 instead.",
    )
    reasons = ReasonSerializer(many=True)
    capability_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="The capability cells read, with sources."
    )


class SpreadStartSerializer(serializers.Serializer):
    span_s = serializers.FloatField(
        help_text="The clients' first requests start evenly over this span: one request's "
        "simulated time in the system with the clients started together."
    )
    ttft_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean.")
    tpot_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean.")
    e2e_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean.")
    percentiles = MetricPercentilesSerializer()
    throughput_rps = serializers.FloatField()
    stationary = serializers.BooleanField()
    stationarity = serializers.CharField()
    note = serializers.CharField(help_text="What differs from the answer's own figures, and why.")
    method_label = serializers.CharField(help_text="The answer's own: the same step times.")
    error_band = MetricErrorBandsSerializer(help_text="The answer's own method's bands.")


class PrefixCacheSerializer(serializers.Serializer):
    cached_tokens_per_prompt = serializers.FloatField(
        help_text="A typical prompt's tokens read from the prefix cache (the shared prefix's "
        "whole blocks times prefix_share); the analytic figures compute only the rest."
    )
    held_prefix_tokens = serializers.IntegerField(
        help_text="The prefix's tokens the cache holds once; 0 when nothing is cached."
    )
    note = serializers.CharField(help_text="Why this many, or why none.")


class EstimateOutputSerializer(serializers.Serializer):
    memory_method = serializers.CharField(
        help_text="Where the memory figures (weights, KV, fits) come from."
    )
    weights_gb_per_gpu = serializers.FloatField()
    kv_bytes_per_token = serializers.IntegerField()
    kv_capacity_tokens = serializers.IntegerField()
    fits = serializers.BooleanField()
    fit_reason = serializers.CharField()
    method = serializers.CharField(
        help_text="The step-time provider: aiconfigurator where its measured kernels cover the "
        "stack, else roofline; method_note says why."
    )
    nature = serializers.ChoiceField(
        choices=["simulated", "analytic"],
        help_text="simulated with concurrency or rate_rps, else analytic (no queueing).",
    )
    method_label = serializers.CharField()
    method_note = serializers.CharField(
        help_text="Why this method: the AIConfigurator database version that answered, or why "
        "AIConfigurator did not cover the stack and the roofline answered."
    )
    step_time_basis = serializers.CharField(help_text="Where the engine's step factors come from.")
    engine = serializers.CharField(allow_null=True)
    engine_version = serializers.CharField(allow_null=True)
    backend = serializers.CharField(allow_null=True)
    capability = EstimateCapabilitySerializer(
        allow_null=True,
        help_text="What the capability matrix says of the stack; null when no engine is named.",
    )
    ttft_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean, or analytic.")
    tpot_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean, or analytic.")
    e2e_ms = serializers.FloatField(allow_null=True, help_text="Simulated mean, or analytic.")
    percentiles = MetricPercentilesSerializer(allow_null=True)
    analytic = AnalyticFiguresSerializer()
    throughput_rps = serializers.FloatField(
        required=False, help_text="Simulated only: requests completed per second by every replica."
    )
    stationary = serializers.BooleanField(allow_null=True)
    stationarity = serializers.CharField(allow_null=True)
    scheduler = SchedulerSerializer(
        required=False, help_text="The budgets the simulation scheduled with: simulated only."
    )
    spread_start = SpreadStartSerializer(
        allow_null=True,
        help_text="With concurrency of more than one client per scheduler: the same closed loop "
        "with its clients started one after another instead of together, the other end of how "
        "far a real run's clients drift apart; null otherwise.",
    )
    error_band = MetricErrorBandsSerializer()
    published = PublishedRowSerializer(
        many=True,
        help_text=f"The nearest published measurements of the model (at most {NEAREST_LIMIT}), "
        "closest first.",
    )
    published_note = serializers.CharField(
        allow_null=True, help_text="Why `published` is empty; null when it is not."
    )
    max_concurrency_at_tpot_slo = serializers.IntegerField(
        allow_null=True, help_text="Clients within tpot_ms over every replica."
    )
    max_concurrency_method = serializers.CharField(
        help_text="Always the analytic estimate's method, whatever `nature` says."
    )
    per_replica = ReplicaShareSerializer(
        help_text="The load is the deployment's; each of its replicas serves an even share."
    )
    prefix_cache = PrefixCacheSerializer(
        allow_null=True, help_text="Null when prefix_share is 0: no prompt shares a prefix."
    )


class TraceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    row_count = serializers.IntegerField()
    uploaded_at = serializers.DateTimeField()
    summary = serializers.JSONField()


class TraceUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    apply = serializers.BooleanField(
        default=True, help_text="Use the trace's lengths and arrival in the selection's workload."
    )
    replay = serializers.BooleanField(
        default=False,
        help_text="With apply: replay the trace request by request instead of a gamma process "
        "fitted to its rate and burstiness.",
    )


class ComputationSerializer(serializers.Serializer):
    """Where candidate computation stands; `status_url` is polled until done or failed."""

    state = serializers.CharField()
    computation = serializers.ChoiceField(choices=ComputeState.choices)
    error = serializers.CharField(allow_blank=True)
    kept_count = serializers.IntegerField(allow_null=True)
    dropped_count = serializers.IntegerField(allow_null=True)
    status_url = serializers.CharField()
