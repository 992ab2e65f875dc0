"""Statuses of a decision record, the moves between them, and the kinds of retest trigger."""

from django.db import models


class DecisionStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PROPOSED = "proposed", "Proposed"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    SUPERSEDED = "superseded", "Superseded"
    DEPRECATED = "deprecated", "Deprecated"


# Only a draft's text may change; from `proposed` on, the reviewed text is what stays.
EDITABLE_STATUSES = frozenset({DecisionStatus.DRAFT})
# Records whose choice is in force: the ones retest triggers watch.
IN_FORCE_STATUSES = frozenset({DecisionStatus.ACCEPTED})
TERMINAL_STATUSES = frozenset(
    {DecisionStatus.REJECTED, DecisionStatus.SUPERSEDED, DecisionStatus.DEPRECATED}
)


class TriggerKind(models.TextChoices):
    """docs/domain.md section 6: re-verify when any of these change."""

    MODEL = "model", "Model change"
    GPU = "gpu", "GPU change"
    ENGINE_MAJOR = "engine_major", "Engine major release"
    KERNEL_BACKEND = "kernel_backend", "Kernel backend change"
    WORKLOAD_DRIFT = "workload_drift", "Workload drift"
    MATURITY = "maturity", "Maturity change of a required feature"
    AGE = "age", "Age"


DEFAULT_REVALIDATE_AFTER_DAYS = 180

# The moves a record can make: from each status, the statuses it may go to.
TRANSITIONS: dict[str, frozenset[str]] = {
    DecisionStatus.DRAFT: frozenset({DecisionStatus.PROPOSED}),
    DecisionStatus.PROPOSED: frozenset({DecisionStatus.ACCEPTED, DecisionStatus.REJECTED}),
    DecisionStatus.ACCEPTED: frozenset({DecisionStatus.SUPERSEDED, DecisionStatus.DEPRECATED}),
}


def statuses_leading_to(status: str) -> frozenset[str]:
    return frozenset(origin for origin, targets in TRANSITIONS.items() if status in targets)
