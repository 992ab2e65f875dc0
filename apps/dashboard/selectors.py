"""What the home page shows of a team: a few aggregate queries, whatever the team's size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet

from apps.audit.selectors import audit_events_visible_to
from apps.benchmarks.choices import PLAN_TERMINAL, PlanState
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.selectors import RunnerRow, runner_rows
from apps.dashboard.stages import LABELS, SelectionFacts, stage_of
from apps.decisions.choices import DecisionStatus
from apps.decisions.models import DecisionRecord, RetestTrigger
from apps.evidence.models import EvidenceRun
from apps.selections.choices import CandidateOutcome, SelectionState
from apps.selections.models import Candidate, Selection
from apps.selections.selectors import selections_of

RECENT_EVENTS = 10
SELECTIONS_SHOWN = 20


@dataclass(frozen=True)
class SelectionRow:
    selection: Selection
    stage: str
    running_plans: int

    @property
    def stage_label(self) -> str:
        return LABELS[self.stage]


@dataclass(frozen=True)
class Dashboard:
    selections: list[SelectionRow]
    more_selections: int
    due_triggers: list[RetestTrigger]
    runners: list[RunnerRow]
    events: list[Any]

    @property
    def runners_online(self) -> int:
        return sum(row.state in ("online", "busy") for row in self.runners)

    @property
    def runners_busy(self) -> int:
        return sum(row.state == "busy" for row in self.runners)


def _counts(queryset: QuerySet, ids: list[int], **where: Any) -> dict[int, int]:
    """{selection id: rows} of one related table, in one grouped query."""
    rows = (
        queryset.filter(selection_id__in=ids, **where)
        .order_by()
        .values("selection_id")
        .annotate(n=Count("id"))
    )
    return {row["selection_id"]: row["n"] for row in rows}


def selection_facts(*, team: Any, selections: list[Selection]) -> dict[int, SelectionFacts]:
    """{selection id: what the layers above know of it}, in one grouped query per table."""
    ids = [selection.pk for selection in selections]
    kept = _counts(Candidate.objects, ids, outcome=CandidateOutcome.KEPT)
    running = _counts(BenchmarkPlan.objects, ids, state=PlanState.RUNNING)
    finished = _counts(BenchmarkPlan.objects, ids, state__in=PLAN_TERMINAL)
    runs = _counts(EvidenceRun.objects, ids)
    proposed = _counts(DecisionRecord.objects, ids, status=DecisionStatus.PROPOSED)
    accepted = _counts(DecisionRecord.objects, ids, status=DecisionStatus.ACCEPTED)
    due = {
        row["record__selection_id"]: row["n"]
        for row in _due_triggers(team)
        .filter(record__selection_id__in=ids)
        .order_by()
        .values("record__selection_id")
        .annotate(n=Count("id"))
    }
    return {
        key: SelectionFacts(
            has_candidates=kept.get(key, 0) > 0,
            running_plans=running.get(key, 0),
            finished_plans=finished.get(key, 0),
            evidence_runs=runs.get(key, 0),
            proposed_records=proposed.get(key, 0),
            accepted_records=accepted.get(key, 0),
            due_triggers=due.get(key, 0),
        )
        for key in ids
    }


def _selection_rows(team: Any) -> tuple[list[SelectionRow], int]:
    live = selections_of(team=team).exclude(state=SelectionState.ARCHIVED)
    total = live.count()
    shown = list(live.order_by("-updated_at", "-pk")[:SELECTIONS_SHOWN])
    facts = selection_facts(team=team, selections=shown)
    rows = [
        SelectionRow(selection, stage_of(facts[selection.pk]), facts[selection.pk].running_plans)
        for selection in shown
    ]
    return rows, max(total - SELECTIONS_SHOWN, 0)


def _due_triggers(team: Any) -> QuerySet[RetestTrigger]:
    """Fired, unacknowledged triggers of the team's accepted records."""
    return RetestTrigger.objects.filter(
        record__team=team, record__status=DecisionStatus.ACCEPTED, acknowledged_at__isnull=True
    )


def team_dashboard(*, user: Any, team: Any) -> Dashboard:
    """The team's selections with their stage, due retests, the fleet and recent events."""
    selections, more = _selection_rows(team)
    due = list(
        _due_triggers(team).select_related("record").order_by("-fired_at", "-pk")[:SELECTIONS_SHOWN]
    )
    events = list(audit_events_visible_to(user=user, team=team).order_by("-pk")[:RECENT_EVENTS])
    return Dashboard(
        selections=selections,
        more_selections=more,
        due_triggers=due,
        runners=runner_rows(team=team),
        events=events,
    )
