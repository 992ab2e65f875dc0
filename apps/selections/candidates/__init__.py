"""Candidate generation: enumerate stacks, drop with reasons, rank the rest, attach hints."""

from __future__ import annotations

from dataclasses import dataclass

from apps.selections.candidates.composition import compose
from apps.selections.candidates.enumeration import non_serving_stacks, serving_stacks
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.hints import hint_features, hints_for
from apps.selections.candidates.kernels import collapse_backends
from apps.selections.candidates.ranking import Ranker, TeamFits
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import CatalogSnapshot

__all__ = ["Evaluation", "Goal", "Reason", "Stack", "Verdict", "evaluate"]


@dataclass(frozen=True)
class Evaluation:
    kept: list[Verdict]
    dropped: list[Verdict]


def evaluate(
    snapshot: CatalogSnapshot,
    goal: Goal,
    *,
    team_fits: TeamFits | None = None,
    simulate_top: int | None = None,
) -> Evaluation:
    """Every stack of the catalog for this goal: kept ones ranked with hints, dropped ones with
    all their reasons. `team_fits` maps (accelerator slug, engine slug) to factors fitted on the
    team's runs."""
    judge = Judge(snapshot, goal)
    kept, dropped = [], []
    for stack in (*non_serving_stacks(snapshot, goal), *serving_stacks(snapshot, goal)):
        verdict = judge.verdict(stack)
        (kept if verdict.kept else dropped).append(verdict)
    kept = collapse_backends(kept, snapshot, relevant=hint_features(goal))
    options = {} if simulate_top is None else {"simulate_top": simulate_top}
    Ranker(goal, judge, team_fits=team_fits, **options).rank(kept)
    for verdict in kept:
        verdict.hints = hints_for(goal, verdict, judge)
    return Evaluation(kept=compose(kept, judge), dropped=dropped)
