"""Measured evidence: runs under one identity, their load points, and every request sample.

Samples are the bulk of the data (a million rows per load point is expected), so they are
written with PostgreSQL COPY (`sample_store.py`) and keyed by (result, index) without a
surrogate id. A value that was not measured is NULL, never 0.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.evidence.choices import RunSource


class EvidenceRun(models.Model):
    """One measurement of one stack: a runner attempt's uploads, or one imported tool run."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="+")
    selection = models.ForeignKey(
        "selections.Selection",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evidence_runs",
    )
    candidate = models.ForeignKey(
        "selections.Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    job = models.ForeignKey(
        "benchmarks.BenchmarkJob",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evidence_runs",
    )
    attempt = models.OneToOneField(
        "benchmarks.JobAttempt",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evidence_run",
    )
    source = models.CharField(max_length=10, choices=RunSource.choices)
    tool = models.CharField(max_length=100)
    tool_version = models.CharField(max_length=100, blank=True)
    identity = models.JSONField(help_text="Every identity field (stackselect_domain/identity.py).")
    identity_fingerprint = models.CharField(max_length=64, db_index=True)
    gpu_count = models.PositiveSmallIntegerField(null=True, blank=True)
    raw_checksums = models.JSONField(
        default=list, help_text="[{name, sha256, bytes}] of every raw file or upload body read."
    )
    notes = models.JSONField(default=list, help_text="How the numbers were converted, if at all.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["team", "selection"], name="evidence_run_selection")]

    def __str__(self) -> str:
        return f"{self.tool} run {self.pk}"

    @property
    def mode(self) -> str:
        """measured or simulated: a dry run's identity says simulated (the API's `mode`)."""
        return "simulated" if self.identity.get("simulated") else "measured"


class LoadPointResult(models.Model):
    """One load point of a run; `summary` stays null until every chunk has arrived."""

    run = models.ForeignKey(EvidenceRun, on_delete=models.CASCADE, related_name="results")
    index = models.PositiveIntegerField()
    load_point = models.JSONField()
    duration_s = models.FloatField()
    chunk_count = models.PositiveIntegerField(default=1)
    chunks_received = models.JSONField(default=list)
    summary = models.JSONField(null=True, blank=True, help_text="analysis.summarize, as JSON.")
    quantiles = models.JSONField(
        null=True, blank=True, help_text="TTFT and TPOT at every whole percentile, for CDFs."
    )
    requested_isl = models.FloatField(null=True, blank=True)
    requested_osl = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="one_result_per_load_point")
        ]

    def __str__(self) -> str:
        return f"load point {self.index} of {self.run}"

    @property
    def complete(self) -> bool:
        return set(self.chunks_received) >= set(range(self.chunk_count))


class Sample(models.Model):
    """One request. `itl_s` packs the gaps as little-endian float64 (NULL: none recorded), which
    stays one column on PostgreSQL and the embedded SQLite alike and copies fast."""

    pk = models.CompositePrimaryKey("result_id", "index")
    result = models.ForeignKey(LoadPointResult, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField()
    send_s = models.FloatField(null=True)
    ttft_s = models.FloatField(null=True)
    e2e_s = models.FloatField(null=True)
    tpot_s = models.FloatField(null=True)
    input_tokens = models.PositiveIntegerField()
    output_tokens = models.PositiveIntegerField()
    itl_count = models.PositiveIntegerField(null=True)
    itl_s = models.BinaryField(null=True)
    # NULL is "no error" / "not reported", distinct from an empty message, as in the upload.
    error = models.TextField(null=True)  # noqa: DJ001
    finish_reason = models.CharField(max_length=40, null=True)  # noqa: DJ001
    status = models.PositiveSmallIntegerField(null=True)

    def __str__(self) -> str:
        return f"request {self.index} of result {self.result_id}"
