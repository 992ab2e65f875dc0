"""Where a selection stands, from the facts of every layer (no Django models here).

The stages follow the path of docs/architecture.md: goal, candidates, plan running, evidence,
decision proposed, accepted, retest due. The most advanced fact wins, except that an accepted
decision with a fired, unacknowledged retest trigger is "retest due".
"""

from __future__ import annotations

from dataclasses import dataclass

GOAL = "goal"
CANDIDATES = "candidates"
PLAN_RUNNING = "plan_running"
EVIDENCE = "evidence"
PROPOSED = "decision_proposed"
ACCEPTED = "accepted"
RETEST_DUE = "retest_due"
LABELS = {
    GOAL: "Goal stated",
    CANDIDATES: "Candidates ready",
    PLAN_RUNNING: "Plan running",
    EVIDENCE: "Evidence in",
    PROPOSED: "Decision proposed",
    ACCEPTED: "Decision accepted",
    RETEST_DUE: "Retest due",
}


@dataclass(frozen=True)
class SelectionFacts:
    has_candidates: bool
    running_plans: int
    finished_plans: int
    evidence_runs: int
    proposed_records: int
    accepted_records: int
    due_triggers: int


def stage_of(facts: SelectionFacts) -> str:
    if facts.accepted_records:
        return RETEST_DUE if facts.due_triggers else ACCEPTED
    if facts.proposed_records:
        return PROPOSED
    if facts.running_plans:
        return PLAN_RUNNING
    if facts.evidence_runs or facts.finished_plans:
        return EVIDENCE
    return CANDIDATES if facts.has_candidates else GOAL
