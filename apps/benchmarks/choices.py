"""States of plans, jobs and attempts, with their terminal sets (side effects fire on entry)."""

from django.db import models
from stackselect_domain.vocabulary import MODE_MEASURED, MODE_SIMULATED


class PlanMode(models.TextChoices):
    FIXED = "fixed", "Fixed load points"
    MAX_RATE_SEARCH = "max_rate_search", "Search the highest rate that meets the SLO"


class RunMode(models.TextChoices):
    """Whether a plan measures the stacks' own engines or dry-runs the pipeline on the simulator.

    Chosen explicitly when planning: a measured plan never falls back to the simulated engine.
    """

    MEASURED = MODE_MEASURED, "Measured on the stack's own engine"
    SIMULATED = MODE_SIMULATED, "Dry run on the simulated engine"


class PlanState(models.TextChoices):
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    PARTIAL = "partial", "Partly succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    WAITING_FOR_RUNNER = "waiting_for_runner", "Waiting for a runner"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class AttemptState(models.TextChoices):
    DISPATCHED = "dispatched", "Dispatched"
    CLAIMED = "claimed", "Claimed"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    LOST = "lost", "Lost (lease expired)"
    SUPERSEDED = "superseded", "Superseded"
    CANCELLED = "cancelled", "Cancelled"


PLAN_TERMINAL = frozenset(
    {PlanState.SUCCEEDED, PlanState.PARTIAL, PlanState.FAILED, PlanState.CANCELLED}
)
JOB_TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
JOB_PENDING = frozenset({JobState.QUEUED, JobState.WAITING_FOR_RUNNER})
ATTEMPT_LEASED = frozenset({AttemptState.CLAIMED, AttemptState.RUNNING})
ATTEMPT_TERMINAL = frozenset(
    {
        AttemptState.SUCCEEDED,
        AttemptState.FAILED,
        AttemptState.LOST,
        AttemptState.SUPERSEDED,
        AttemptState.CANCELLED,
    }
)
# What a runner may report when it finishes an attempt.
ATTEMPT_FINISH_STATES = (AttemptState.SUCCEEDED, AttemptState.FAILED, AttemptState.CANCELLED)
