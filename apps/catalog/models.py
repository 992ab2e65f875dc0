"""The capability matrix: engines and their releases, kernel backends, accelerators, models,
features, and one Capability row per (release, feature[, backend][, vendor/family]) cell.

Catalog objects are global (no team); only staff (the curators) change them, through services
that write an audit event per change. Every figure carries its source and as_of date: in a
`sources` JSON map ({field: {"source", "as_of", "note"}}) for hardware and model figures, and
in columns for capabilities and release defaults.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from apps.catalog.choices import (
    AttentionKind,
    Contract,
    EngineKind,
    Maturity,
    MemoryBasis,
    PrefixCacheKind,
    ProjectStatus,
    PublishedScenario,
    UnchunkedLimit,
    Vendor,
)
from apps.catalog.shapes import WordList, budget_tier_list, figure_sources


def positive(value: float) -> None:
    """A hardware or model figure the estimator divides or scales by: zero or less is a typo
    (the field stays empty when no source gives the figure)."""
    if not value > 0:
        raise ValidationError("Must be greater than 0.", code="min_value")


# Counts a scheduler or model cannot have zero of.
AT_LEAST_ONE = [MinValueValidator(1)]


class Engine(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=20, choices=EngineKind.choices)
    homepage = models.URLField(blank=True)
    licence = models.CharField(max_length=60, blank=True)
    status = models.CharField(
        max_length=20, choices=ProjectStatus.choices, default=ProjectStatus.ACTIVE
    )
    status_as_of = models.DateField(null=True, blank=True)
    status_source = models.CharField(max_length=500, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return self.name


class EngineRelease(models.Model):
    """One version of an engine, with the scheduler defaults a simulator needs."""

    engine = models.ForeignKey(Engine, on_delete=models.CASCADE, related_name="releases")
    version = models.CharField(max_length=40)
    release_date = models.DateField(null=True, blank=True)
    source = models.CharField(max_length=500, blank=True)
    as_of = models.DateField(null=True, blank=True)
    max_num_batched_tokens = models.PositiveIntegerField(
        null=True, blank=True, validators=AT_LEAST_ONE
    )
    max_num_seqs = models.PositiveIntegerField(null=True, blank=True, validators=AT_LEAST_ONE)
    kv_block_size = models.PositiveIntegerField(null=True, blank=True, validators=AT_LEAST_ONE)
    budget_tiers = models.JSONField(
        default=list,
        blank=True,
        validators=[budget_tier_list],
        help_text="Budgets the engine resolves from the GPU it starts on, first match winning: "
        '[{"memory_gb_below": 60, "max_num_batched_tokens": 4096}] or '
        '[{"accelerators": ["a100-sxm-80gb"], "max_num_seqs": 256}]; a GPU no tier matches '
        "gets the budgets above. Sourced with the defaults.",
    )
    chunked_prefill_default = models.BooleanField(null=True, blank=True)
    unchunked_limit = models.CharField(
        max_length=10,
        choices=UnchunkedLimit.choices,
        blank=True,
        help_text="Without chunked prefill, what must fit in one step's token budget; blank: "
        "not recorded (the prompt and output together, the stricter rule, is assumed).",
    )
    prefix_cache_kind = models.CharField(max_length=20, choices=PrefixCacheKind.choices, blank=True)
    prefix_cache_default_on = models.BooleanField(
        null=True, blank=True, help_text="Whether prefix reuse is on without a flag; null: unknown."
    )
    defaults_source = models.TextField(blank=True)
    defaults_as_of = models.DateField(null=True, blank=True)
    memory_fraction = models.FloatField(
        null=True,
        blank=True,
        validators=[positive, MaxValueValidator(1)],
        help_text="The engine's default memory fraction, in (0, 1], e.g. 0.9.",
    )
    memory_fraction_basis = models.CharField(max_length=10, choices=MemoryBasis.choices, blank=True)
    memory_fraction_source = models.TextField(blank=True)
    memory_fraction_as_of = models.DateField(null=True, blank=True)
    serves_engines = models.JSONField(
        default=list,
        blank=True,
        help_text='For orchestrators and KV layers: engine slugs they run on, e.g. ["vllm"].',
    )
    serves_source = models.CharField(max_length=500, blank=True)
    serves_as_of = models.DateField(null=True, blank=True)
    tuned_settings = models.JSONField(
        default=list,
        blank=True,
        help_text="Settings the engine's own documentation recommends per workload class: "
        '[{"workload_class", "settings", "engine_flags", "source", "as_of", "note"}] '
        "(stackselect_domain/tuning.py).",
    )
    needs_review = models.BooleanField(
        default=False, help_text="Copied forward; a curator must confirm it."
    )

    class Meta:
        ordering = ["engine__name", "-release_date", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["engine", "version"], name="one_release_per_version")
        ]

    def __str__(self) -> str:
        return f"{self.engine.name} {self.version}"

    @property
    def major_version(self) -> str:
        return self.version.split(".", 1)[0]


class KernelBackend(models.Model):
    """A kernel path, with the sourced facts of what it can run.

    attention_kinds and precisions (prec_* feature keys) list what the path serves; families
    lists the accelerator generations it is built for, empty meaning every family of the vendors
    its release rows name. Enumeration drops a stack that falls outside any of them.
    """

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    homepage = models.URLField(blank=True)
    description = models.TextField(blank=True)
    attention_kinds = models.JSONField(
        default=list,
        blank=True,
        validators=[WordList(AttentionKind.values)],
        help_text='Attention kinds served, e.g. ["mla"].',
    )
    precisions = models.JSONField(
        default=list,
        blank=True,
        validators=[WordList()],
        help_text='Weight formats served, e.g. ["prec_fp8"].',
    )
    families = models.JSONField(
        default=list,
        blank=True,
        validators=[WordList()],
        help_text='Accelerator families, e.g. ["hopper"]; empty: any.',
    )
    applicability_source = models.CharField(max_length=500, blank=True)
    applicability_as_of = models.DateField(null=True, blank=True)
    applicability_note = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ReleaseBackend(models.Model):
    """A kernel backend an engine release can run, and on which vendors' hardware."""

    release = models.ForeignKey(EngineRelease, on_delete=models.CASCADE, related_name="backends")
    backend = models.ForeignKey(KernelBackend, on_delete=models.PROTECT, related_name="releases")
    vendors = models.JSONField(default=list, help_text='Vendor words, e.g. ["nvidia", "amd"].')
    is_default = models.BooleanField(default=False)

    class Meta:
        ordering = ["release", "backend__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "backend"], name="one_backend_row_per_release"
            )
        ]

    def __str__(self) -> str:
        return f"{self.release} on {self.backend}"


class Accelerator(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    vendor = models.CharField(max_length=20, choices=Vendor.choices)
    family = models.CharField(max_length=40, blank=True)
    name = models.CharField(max_length=120)
    memory_gb = models.FloatField(null=True, blank=True, validators=[positive])
    bandwidth_tbps = models.FloatField(null=True, blank=True, validators=[positive])
    bf16_tflops = models.FloatField(null=True, blank=True, validators=[positive])
    fp8_tflops = models.FloatField(null=True, blank=True, validators=[positive])
    fp4_tflops = models.FloatField(null=True, blank=True, validators=[positive])
    interconnect = models.CharField(max_length=120, blank=True)
    interconnect_gbps = models.FloatField(
        null=True, blank=True, validators=[positive], help_text="Per direction, per device."
    )
    tdp_w = models.FloatField(null=True, blank=True, validators=[positive])
    sources = models.JSONField(default=dict, blank=True, validators=[figure_sources])

    class Meta:
        ordering = ["vendor", "name"]

    def __str__(self) -> str:
        return self.name


# Model names carry version dots (llama-3.1-8b), which Django's slug validator refuses.
MODEL_SLUG_VALIDATOR = RegexValidator(
    r"^[a-z0-9][a-z0-9._-]*$", "Use lower-case letters, digits, dots, hyphens and underscores."
)


class ModelSpec(models.Model):
    slug = models.CharField(max_length=80, unique=True, validators=[MODEL_SLUG_VALIDATOR])
    name = models.CharField(max_length=120)
    family = models.CharField(max_length=40)
    architecture = models.CharField(
        max_length=64, help_text="The arch_* feature key engines must support."
    )
    checkpoint = models.CharField(max_length=200, blank=True)
    native_dtype = models.CharField(max_length=16, blank=True, help_text="Empty when unsourced.")
    params_total_b = models.FloatField(validators=[positive])
    params_active_b = models.FloatField(validators=[positive])
    layers = models.PositiveIntegerField(validators=AT_LEAST_ONE)
    hidden_size = models.PositiveIntegerField(validators=AT_LEAST_ONE)
    intermediate_size = models.PositiveIntegerField(null=True, blank=True)
    attention_heads = models.PositiveIntegerField(validators=AT_LEAST_ONE)
    kv_heads = models.PositiveIntegerField(validators=AT_LEAST_ONE)
    head_dim = models.PositiveIntegerField(validators=AT_LEAST_ONE)
    attention_kind = models.CharField(max_length=10, choices=AttentionKind.choices)
    sliding_window = models.PositiveIntegerField(null=True, blank=True)
    sliding_window_layers = models.PositiveIntegerField(null=True, blank=True)
    kv_lora_rank = models.PositiveIntegerField(null=True, blank=True)
    qk_rope_head_dim = models.PositiveIntegerField(null=True, blank=True)
    experts_total = models.PositiveIntegerField(null=True, blank=True)
    experts_active = models.PositiveIntegerField(null=True, blank=True)
    max_context = models.PositiveIntegerField(null=True, blank=True)
    vocab_size = models.PositiveIntegerField(null=True, blank=True)
    sources = models.JSONField(default=dict, blank=True, validators=[figure_sources])

    class Meta:
        ordering = ["family", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_moe(self) -> bool:
        return bool(self.experts_total)


class Feature(models.Model):
    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    contract = models.CharField(max_length=20, choices=Contract.choices)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["contract", "name"]

    def __str__(self) -> str:
        return self.name


class Capability(models.Model):
    """One cell: how mature `feature` is in `release`, optionally only with a backend or vendor."""

    release = models.ForeignKey(
        EngineRelease, on_delete=models.CASCADE, related_name="capabilities"
    )
    feature = models.ForeignKey(Feature, on_delete=models.PROTECT, related_name="capabilities")
    backend = models.ForeignKey(
        KernelBackend, null=True, blank=True, on_delete=models.PROTECT, related_name="capabilities"
    )
    vendor = models.CharField(max_length=20, choices=Vendor.choices, blank=True)
    family = models.CharField(max_length=40, blank=True)
    maturity = models.CharField(max_length=16, choices=Maturity.choices)
    note = models.TextField(blank=True)
    evidence_url = models.URLField(max_length=500)
    as_of = models.DateField()
    verified_by = models.CharField(max_length=120, blank=True)
    needs_review = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "capabilities"
        ordering = ["release", "feature"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "feature", "vendor", "family"],
                condition=Q(backend__isnull=True),
                name="one_cell_without_backend",
            ),
            models.UniqueConstraint(
                fields=["release", "feature", "backend", "vendor", "family"],
                condition=Q(backend__isnull=False),
                name="one_cell_with_backend",
            ),
        ]

    def __str__(self) -> str:
        scope = " ".join(
            part for part in (self.backend and self.backend.slug, self.vendor, self.family) if part
        )
        return (
            f"{self.release} · {self.feature.key}{f' [{scope}]' if scope else ''}: {self.maturity}"
        )


class PublishedMeasurement(models.Model):
    """A measurement someone else published, with its conditions and source.

    Evidence of kind `published`: shown beside predictions and the team's own runs, never as
    the team's own. `held_out` marks the rows the accuracy figures are measured on, which no
    fitted factor may see (apps/catalog/published_sample.held_out).
    """

    source_name = models.CharField(max_length=200)
    source_key = models.CharField(max_length=200, help_text="The row's id within its source.")
    source_url = models.URLField(max_length=500)
    licence = models.CharField(max_length=60)
    as_of = models.DateField(help_text="When we read the source.")
    measured_on = models.DateField(null=True, blank=True, help_text="When the source measured.")
    source_detail = models.TextField(blank=True, help_text="The source's own provenance text.")
    model = models.ForeignKey(ModelSpec, on_delete=models.PROTECT, related_name="published")
    checkpoint = models.CharField(max_length=200, help_text="The checkpoint the source names.")
    accelerator = models.ForeignKey(Accelerator, on_delete=models.PROTECT, related_name="published")
    system = models.CharField(max_length=60, help_text="The system name the source uses.")
    engine = models.ForeignKey(Engine, on_delete=models.PROTECT, related_name="published")
    engine_version = models.CharField(max_length=60, blank=True)
    precision = models.CharField(max_length=16)
    mode = models.CharField(max_length=10, help_text="agg (one pool) or disagg (P/D split).")
    tp = models.PositiveIntegerField(null=True, blank=True)
    pp = models.PositiveIntegerField(null=True, blank=True)
    ep = models.PositiveIntegerField(null=True, blank=True)
    dp = models.PositiveIntegerField(null=True, blank=True)
    layout = models.JSONField(
        default=dict, blank=True, help_text="Prefill and decode pools of a disaggregated row."
    )
    isl = models.PositiveIntegerField()
    osl = models.PositiveIntegerField()
    concurrency = models.PositiveIntegerField(null=True, blank=True)
    batch_size = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The engine's batch per attention rank the source states; below the clients "
        "per rank where the engine capped it. Null: not stated.",
    )
    scenario = models.CharField(
        max_length=20,
        choices=PublishedScenario.choices,
        default=PublishedScenario.FIXED_CONCURRENCY,
        help_text="How the source loaded the engine.",
    )
    ttft_ms = models.FloatField(null=True, blank=True, help_text="Null: not published.")
    tpot_ms = models.FloatField(null=True, blank=True, help_text="Null: not published.")
    throughput_tokens_s = models.FloatField(
        null=True, blank=True, help_text="Output tokens/s as published; null when not given."
    )
    output_tokens_s_per_gpu = models.FloatField(
        null=True,
        blank=True,
        help_text="Output tokens/s per GPU as published; null when not given.",
    )
    held_out = models.BooleanField(default=False)

    class Meta:
        ordering = ["model__name", "accelerator__name", "engine__name", "isl", "concurrency"]
        constraints = [
            models.UniqueConstraint(
                fields=["source_name", "source_key"], name="one_published_row_per_source_key"
            )
        ]
        indexes = [models.Index(fields=["model", "accelerator"], name="published_model_accel")]

    def __str__(self) -> str:
        return f"{self.source_key} ({self.source_name})"
