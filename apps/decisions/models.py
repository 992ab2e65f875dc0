"""Decision records (docs/domain.md section 6), their per-team numbers and their fired retest
triggers.

A record keeps its four parts as JSON snapshots taken from the selection, the catalog and the
evidence when it is written, so later edits elsewhere never change what was decided. The
`baseline` is the state the retest triggers compare against (see baseline.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from stackselect_domain.slo import SLO

from apps.decisions.choices import (
    DEFAULT_REVALIDATE_AFTER_DAYS,
    DecisionStatus,
    TriggerKind,
)
from apps.decisions.evidence_kind import evidence_kind


def all_trigger_kinds() -> list[str]:
    return list(TriggerKind.values)


class DecisionSequence(models.Model):
    """The last record number handed out in a team; bumped under the row lock."""

    team = models.OneToOneField(
        "accounts.Team", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"DR-{self.last_number} in team {self.team_id}"


class DecisionRecord(models.Model):
    team = models.ForeignKey(
        "accounts.Team", on_delete=models.CASCADE, related_name="decision_records"
    )
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    status = models.CharField(
        max_length=12, choices=DecisionStatus.choices, default=DecisionStatus.DRAFT
    )
    status_reason = models.TextField(blank=True, help_text="Why the record is in its status.")
    selection = models.ForeignKey(
        "selections.Selection",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="decision_records",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    goal = models.JSONField(help_text="Workload, SLO, capacity and operational constraints.")
    candidates = models.JSONField(help_text="[{key, stack, release, capabilities, ...}]")
    evidence = models.JSONField(help_text="[{run_id, candidate_key, identity_fingerprint, ...}]")
    comparison = models.JSONField(
        default=dict,
        blank=True,
        help_text="{reference_key, quality_tolerance, candidates: [{candidate_key, quality}], "
        "checklist, missed}: quality flags and the fair-comparison checklist.",
    )
    chosen_key = models.CharField(max_length=40, blank=True)
    rationale = models.TextField(blank=True)
    dropped = models.JSONField(default=dict, blank=True, help_text="{candidate key: reason}")
    risks = models.TextField(blank=True)
    retest_kinds = models.JSONField(default=all_trigger_kinds)
    revalidate_after_days = models.PositiveIntegerField(default=DEFAULT_REVALIDATE_AFTER_DAYS)
    baseline = models.JSONField(default=dict, help_text="What the retest triggers compare to.")
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    proposed_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    supersedes = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="successors",
    )
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    simulation_only = models.BooleanField(
        default=False,
        help_text="Set when proposing: the record rests on simulated evidence alone.",
    )
    retest_needed = models.BooleanField(default=False)
    retest_needed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["team", "number"], name="one_record_number_per_team")
        ]
        indexes = [models.Index(fields=["status", "team"], name="decision_status_team")]

    def __str__(self) -> str:
        return f"{self.reference}: {self.title}"

    @property
    def reference(self) -> str:
        return f"DR-{self.number}"

    @property
    def evidence_kind(self) -> str:
        return evidence_kind(self.evidence)

    @property
    def slo_text(self) -> str:
        """The goal's SLO in the words of the domain's one SLO rule (percentile included)."""
        return SLO.from_dict(self.goal.get("slo") or {}).describe()

    @property
    def display_title(self) -> str:
        """The title, saying so when the record rests on a simulation only."""
        return f"{self.title} (simulation only)" if self.simulation_only else self.title

    def candidate(self, key: str) -> dict | None:
        return next((entry for entry in self.candidates if entry.get("key") == key), None)


class RetestTrigger(models.Model):
    """One fired trigger: what changed, why it matters, and the retest plan made for it.

    `key` names the change itself (a cell at a maturity, a release, a trace), so the same
    change fires once however often it is evaluated.
    """

    record = models.ForeignKey(DecisionRecord, on_delete=models.CASCADE, related_name="triggers")
    kind = models.CharField(max_length=20, choices=TriggerKind.choices)
    key = models.CharField(max_length=200)
    reason = models.TextField()
    changed_field = models.CharField(max_length=100, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    fired_at = models.DateTimeField(auto_now_add=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    plan = models.ForeignKey(
        "benchmarks.BenchmarkPlan",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    plan_note = models.TextField(blank=True, help_text="What the retest plan could not express.")

    class Meta:
        ordering = ["-fired_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["record", "kind", "key"], name="one_trigger_per_change")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.record.reference}"
