"""Benchmark plans, one job per chosen candidate, attempts on runners, logs and raw results.

A plan's identity (docs/domain.md section 5) is shared by all its jobs, so their results compare.
Result uploads keep the raw gzip body: the Evidence issue ingests the per-request records from it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.benchmarks.choices import AttemptState, JobState, PlanMode, PlanState, RunMode


class BenchmarkPlan(models.Model):
    team = models.ForeignKey(
        "accounts.Team", on_delete=models.CASCADE, related_name="benchmark_plans"
    )
    selection = models.ForeignKey(
        "selections.Selection", on_delete=models.PROTECT, related_name="benchmark_plans"
    )
    title = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    mode = models.CharField(max_length=20, choices=PlanMode.choices, default=PlanMode.FIXED)
    run_mode = models.CharField(
        max_length=20,
        choices=RunMode.choices,
        default=RunMode.MEASURED,
        help_text="measured: the stacks' own engines; simulated: a dry run (API: `mode`).",
    )
    state = models.CharField(max_length=20, choices=PlanState.choices, default=PlanState.RUNNING)
    identity = models.JSONField()
    identity_fingerprint = models.CharField(max_length=64, db_index=True)
    load_points = models.JSONField()
    search = models.JSONField(null=True, blank=True)
    requests = models.JSONField(help_text="The fixed-seed request schedule at unit rate.")
    max_attempts = models.PositiveSmallIntegerField(default=3)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title

    @property
    def simulated(self) -> bool:
        return self.run_mode == RunMode.SIMULATED

    @property
    def temperature(self) -> float | None:
        """What every request asks the engine to sample with; None: each engine's default."""
        return self.identity["harness"].get("temperature")


class BenchmarkJob(models.Model):
    """One chosen candidate of a plan, run on one launched engine."""

    plan = models.ForeignKey(BenchmarkPlan, on_delete=models.CASCADE, related_name="jobs")
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(
        "selections.Candidate", null=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    stack = models.JSONField()
    engine = models.JSONField(help_text="The job spec's engine section (adapter, model, options).")
    tuning = models.JSONField(
        default=dict,
        blank=True,
        help_text="The tuning trial this job runs: {group, trial, settings, origin, source}.",
    )
    quality = models.JSONField(
        null=True,
        blank=True,
        help_text="The job spec's quality section: the probe's prompts and sampling.",
    )
    accelerator = models.CharField(max_length=64)
    gpu_count = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=20, choices=JobState.choices, default=JobState.QUEUED)
    state_reason = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    progress = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "id"]
        indexes = [models.Index(fields=["team", "state"], name="job_team_state")]

    def __str__(self) -> str:
        return (
            f"{self.stack.get('engine')} {self.stack.get('engine_version')} on "
            f"{self.gpu_count}x {self.accelerator}"
        )


class JobAttempt(models.Model):
    job = models.ForeignKey(BenchmarkJob, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    runner = models.ForeignKey(
        "runners.Runner", null=True, blank=True, on_delete=models.SET_NULL, related_name="attempts"
    )
    queue = models.CharField(max_length=200)
    state = models.CharField(
        max_length=20, choices=AttemptState.choices, default=AttemptState.DISPATCHED
    )
    reason = models.TextField(blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="one_attempt_number_per_job")
        ]
        indexes = [models.Index(fields=["state", "lease_expires_at"], name="attempt_lease")]

    def __str__(self) -> str:
        return f"attempt {self.number} of job {self.job_id}"


class JobLog(models.Model):
    """An attempt's log; the runner appends at `length` (its offset) and nowhere else."""

    attempt = models.OneToOneField(JobAttempt, on_delete=models.CASCADE, related_name="log")
    text = models.TextField(default="", blank=True)
    length = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"log of {self.attempt}"


class ResultUpload(models.Model):
    """One chunk of one load point's per-request records, kept as the gzip body that was sent."""

    attempt = models.ForeignKey(JobAttempt, on_delete=models.CASCADE, related_name="uploads")
    job = models.ForeignKey(BenchmarkJob, on_delete=models.CASCADE, related_name="uploads")
    load_point_index = models.PositiveIntegerField()
    chunk_index = models.PositiveIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=1)
    # Unique per attempt only: a key names an upload within its attempt, so one runner's keys
    # can neither collide with nor reveal another's.
    idempotency_key = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    body = models.BinaryField()
    record_count = models.PositiveIntegerField()
    meta = models.JSONField(
        default=dict, help_text="load_point, started_at, duration_s, engine, harness"
    )
    summary = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "load_point_index", "chunk_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["attempt", "load_point_index", "chunk_index"],
                name="one_upload_per_chunk",
            ),
            models.UniqueConstraint(
                fields=["attempt", "idempotency_key"], name="one_upload_per_attempt_key"
            ),
        ]

    def __str__(self) -> str:
        return f"results of load point {self.load_point_index} chunk {self.chunk_index}"


class QualityResult(models.Model):
    """The quality probe's raw outputs of one attempt, and their score by the domain's rule."""

    attempt = models.OneToOneField(JobAttempt, on_delete=models.CASCADE, related_name="quality")
    job = models.ForeignKey(BenchmarkJob, on_delete=models.CASCADE, related_name="quality_results")
    probe_set = models.CharField(max_length=60)
    sampling = models.JSONField(default=dict)
    outputs = models.JSONField(default=list, help_text="[{id, text, tool_calls, error, latency_s}]")
    score = models.JSONField(default=dict, help_text="{correct, total, rate, mode}")
    evaluation = models.JSONField(
        null=True, blank=True, help_text="A team's own evaluation command: {name, score, metric}."
    )
    received_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "attempt"]

    def __str__(self) -> str:
        return f"quality probe of {self.attempt}"
