"""The dashboard's answers to the selections app's questions (connected in apps.py)."""

from __future__ import annotations

from typing import Any

from apps.dashboard.selectors import selection_facts
from apps.dashboard.stages import LABELS, stage_of
from apps.selections.choices import SelectionState
from apps.selections.models import Selection
from apps.selections.signals import stages_wanted


def _stages(sender: Any, *, selections: list[Selection], **_: Any) -> dict[int, str]:
    """Live selections stand where their plans, evidence and decisions put them (an archived
    one keeps saying so); one team's selections at a time, since facts are team-scoped."""
    labels: dict[int, str] = {}
    live = [s for s in selections if s.state != SelectionState.ARCHIVED]
    for team_id in {s.team_id for s in live}:
        mine = [s for s in live if s.team_id == team_id]
        facts = selection_facts(team=team_id, selections=mine)
        labels |= {key: LABELS[stage_of(fact)] for key, fact in facts.items()}
    return labels


def connect() -> None:
    stages_wanted.connect(_stages, sender=Selection, dispatch_uid="dashboard.stages")
