"""A team's goal (workload, SLO, constraints) and the candidate stacks computed for it.

The workload, SLO and constraints are JSON documents validated by the API serializers (their
shape is the public contract of POST /api/v1/selections/), so the goal snapshots cleanly into a
decision record and a benchmark plan's identity.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.selections.choices import CandidateOutcome, ComputeState, SelectionState


class Selection(models.Model):
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="selections")
    title = models.CharField(max_length=160)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    state = models.CharField(
        max_length=20, choices=SelectionState.choices, default=SelectionState.DRAFT
    )
    model = models.ForeignKey(
        "catalog.ModelSpec",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="selections",
    )
    custom_model = models.JSONField(
        null=True, blank=True, help_text="An architecture not in the catalog."
    )
    workload = models.JSONField()
    slo = models.JSONField()
    constraints = models.JSONField(default=dict)
    dropped_groups = models.JSONField(
        null=True,
        blank=True,
        help_text="Dropped stacks by reason code, stored with the candidates.",
    )
    computation = models.CharField(
        max_length=10, choices=ComputeState.choices, default=ComputeState.IDLE
    )
    computation_error = models.TextField(blank=True)
    computation_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Whose request the background task acts for (the audit actor).",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class WorkloadTrace(models.Model):
    """An uploaded request trace (CSV or JSONL) from which distributions and the rate derive."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="traces")
    selection = models.ForeignKey(
        Selection, null=True, blank=True, on_delete=models.SET_NULL, related_name="traces"
    )
    name = models.CharField(max_length=200)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)
    sha256 = models.CharField(max_length=64)
    row_count = models.PositiveIntegerField()
    rows = models.JSONField(
        help_text="timestamp, input_tokens, output_tokens, prefix_id per request."
    )
    summary = models.JSONField()

    class Meta:
        ordering = ["-uploaded_at"]

    def __str__(self) -> str:
        return self.name


class Candidate(models.Model):
    """One enumerated stack: kept with its score and estimate, or dropped with its reasons."""

    selection = models.ForeignKey(Selection, on_delete=models.CASCADE, related_name="candidates")
    outcome = models.CharField(max_length=10, choices=CandidateOutcome.choices)
    rank = models.PositiveIntegerField(null=True, blank=True)
    release = models.ForeignKey("catalog.EngineRelease", on_delete=models.PROTECT, related_name="+")
    backend = models.ForeignKey(
        "catalog.KernelBackend", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    accelerator = models.ForeignKey(
        "catalog.Accelerator", on_delete=models.PROTECT, related_name="+"
    )
    stack = models.JSONField(
        help_text="engine, engine_version, backend, accelerator, gpu_count, tp/pp/ep/dp, precision"
    )
    score = models.FloatField(null=True, blank=True)
    estimate = models.JSONField(null=True, blank=True)
    hints = models.JSONField(default=list)
    reasons = models.JSONField(default=list, help_text="[{code, message}] for dropped stacks.")
    capability_ids = models.JSONField(default=list, help_text="Catalog cells this verdict used.")
    chosen = models.BooleanField(default=False, help_text="Picked for the benchmark plan.")

    class Meta:
        ordering = ["selection", "outcome", "rank", "id"]
        indexes = [models.Index(fields=["selection", "outcome", "rank"], name="candidate_listing")]

    def __str__(self) -> str:
        stack = self.stack
        return (
            f"{stack.get('engine')} {stack.get('engine_version')} on "
            f"{stack.get('gpu_count')}x {stack.get('accelerator')}"
        )
