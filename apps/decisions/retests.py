"""Writes of the retest triggers: evaluate a record, fire what changed (once), make a retest
plan, acknowledge a notification.

Evaluation locks the record row, so two evaluations of one record (an event and the sweep, or
two sweeps) run one after the other and the second finds the triggers already there; the
unique (record, kind, key) constraint backs that up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from stackselect_domain.speculative import Speculative
from stackselect_domain.words import grouped

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.decisions import detection
from apps.decisions.baseline import new_traces, observe, trace_sample, workload_sample
from apps.decisions.choices import IN_FORCE_STATUSES, TriggerKind
from apps.decisions.detection import Finding
from apps.decisions.models import DecisionRecord, RetestTrigger
from apps.decisions.webhook import webhook_on_commit
from apps.selections.choices import CandidateOutcome
from apps.selections.services import candidates_choose

SWEEP_ACTOR = Actor.system("decisions.sweep")
# What plan_create cannot vary, by trigger kind: it runs the candidates' own catalog rows.
PLAN_LIMITS = {
    TriggerKind.ENGINE_MAJOR: "plan_create runs the chosen candidate's catalog release; the new "
    "engine version is recorded here and needs a recomputed candidate to be benchmarked.",
    TriggerKind.KERNEL_BACKEND: "plan_create runs the chosen candidate's kernel backend; the "
    "changed backend is recorded here and needs a recomputed candidate to be benchmarked.",
    TriggerKind.GPU: "The identity has no driver or CUDA field: the plan reruns the same "
    "identity on the team's runners, which now report the changed environment.",
}


def _drift_findings(record: DecisionRecord, current: dict[str, Any]) -> list[Finding]:
    reference = workload_sample(record.goal["workload"])
    traces = new_traces(
        team_id=record.team_id,
        selection_id=record.selection_id,
        after_id=record.baseline.get("last_trace_id", 0),
    )
    findings = [
        detection.drift_finding(
            key=f"trace:{trace.pk}",
            label=f"Trace {trace.name} ({grouped(trace.row_count)} requests)",
            reference=reference,
            observed=trace_sample(trace),
        )
        for trace in traces
    ]
    workload = current.get("workload")
    # A trace applied to the selection replaces its workload; the trace itself is compared.
    if not traces and workload and workload != record.goal["workload"]:
        findings.append(
            detection.drift_finding(
                key=f"workload:{detection.short_hash(workload)}",
                label="The selection's workload was edited",
                reference=reference,
                observed=workload_sample(workload),
            )
        )
    return [finding for finding in findings if finding is not None]


def findings_for(record: DecisionRecord, *, now: datetime) -> list[Finding]:
    """Every change since the record's baseline, of the kinds the record watches."""
    chosen = record.candidate(record.chosen_key)
    if chosen is None or not record.baseline:
        return []
    baseline = record.baseline
    current = observe(
        team_id=record.team_id,
        goal=record.goal,
        chosen=chosen,
        selection_id=record.selection_id,
        runner_ids=[int(runner_id) for runner_id in baseline.get("runners", {})],
    )
    findings = [
        *detection.model_findings(baseline, current),
        *detection.gpu_findings(baseline, current),
        *detection.engine_major_findings(baseline, current, chosen["release"]["version"]),
        *detection.backend_findings(baseline, current),
        *detection.maturity_findings(baseline, current),
        *_drift_findings(record, current),
    ]
    aged = detection.age_finding(
        accepted_at=record.decided_at, days=record.revalidate_after_days, now=now
    )
    findings += [aged] if aged else []
    return [finding for finding in findings if finding.kind in record.retest_kinds]


def _fire(record: DecisionRecord, finding: Finding) -> RetestTrigger:
    trigger = RetestTrigger.objects.create(
        record=record,
        kind=finding.kind,
        key=finding.key[:200],
        reason=finding.reason,
        changed_field=finding.changed_field,
        detail=finding.detail,
    )
    audit_record(
        actor=SWEEP_ACTOR,
        action="decision.retest_trigger",
        obj=record,
        team=record.team,
        object_repr=str(record),
        after={"kind": finding.kind, "key": trigger.key, "changed_field": finding.changed_field},
        message=finding.reason,
    )
    return trigger


def _webhook_payload(record: DecisionRecord, fired: list[RetestTrigger]) -> dict[str, Any]:
    return {
        "event": "decision.retest_needed",
        "team": record.team.slug,
        "record": record.reference,
        "record_id": record.pk,
        "title": record.title,
        "triggers": [
            {
                "kind": trigger.kind,
                "reason": trigger.reason,
                "changed_field": trigger.changed_field,
                "fired_at": trigger.fired_at.isoformat(),
            }
            for trigger in fired
        ],
    }


@transaction.atomic
def record_evaluate(*, record_id: int, now: datetime | None = None) -> list[RetestTrigger]:
    """Fire the record's new triggers (once each); returns the ones fired by this call."""
    record = (
        DecisionRecord.objects.select_for_update(of=("self",))
        .select_related("team")
        .filter(pk=record_id)
        .first()
    )
    if record is None or record.status not in IN_FORCE_STATUSES:
        return []
    seen = set(record.triggers.values_list("kind", "key"))
    fresh = [
        finding
        for finding in findings_for(record, now=now or timezone.now())
        if (finding.kind, finding.key[:200]) not in seen
    ]
    fired = [_fire(record, finding) for finding in fresh]
    if fired and not record.retest_needed:
        record.retest_needed = True
        record.retest_needed_at = timezone.now()
        record.save(update_fields=["retest_needed", "retest_needed_at"])
    if fired:
        webhook_on_commit(_webhook_payload(record, fired))
    return fired


@dataclass(frozen=True)
class EvaluationResult:
    evaluated: int
    fired: int


def records_evaluate(*, record_ids: Iterable[int], now: datetime | None = None) -> EvaluationResult:
    """Each record in its own transaction, so one failing record does not hold back others."""
    evaluated = fired = 0
    for record_id in record_ids:
        fired += len(record_evaluate(record_id=record_id, now=now))
        evaluated += 1
    return EvaluationResult(evaluated, fired)


def _plan_options(record: DecisionRecord) -> PlanOptions:
    """The options of the plan behind the record's evidence, so the retest keeps its identity."""
    plan_ids = [entry["plan_id"] for entry in record.evidence if entry.get("plan_id")]
    plan = BenchmarkPlan.objects.filter(pk__in=plan_ids).order_by("-pk").first()
    if plan is None:
        return PlanOptions()
    identity = plan.identity
    workload, harness = identity.get("workload", {}), identity.get("harness", {})
    policy = identity.get("failure_policy", {})
    return PlanOptions(
        mode=plan.mode,
        run_mode=plan.run_mode,
        seed=workload.get("seed", 0),
        request_count=workload.get("request_count", 200),
        load_points=tuple(
            {key: value for key, value in point.items() if key != "index"}
            for point in plan.load_points
        ),
        warmup_requests=harness.get("warmup_requests", 4),
        measurement_window_s=identity.get("measurement_window_s", 120.0),
        max_error_rate=policy.get("max_error_rate", 0.05),
        max_attempts=policy.get("max_attempts", plan.max_attempts),
        request_timeout_s=harness.get("timeout_s", 120.0),
        endpoint=harness.get("endpoint", "completions"),
        temperature=harness.get("temperature"),
        speculative=_speculative(identity.get("speculative")),
    )


def _speculative(stored: Any) -> Speculative | None:
    """The plan's speculative setting as its identity stores it (`Speculative.as_dict`)."""
    return Speculative.from_dict(stored) if stored else None


def _chosen_candidate_id(record: DecisionRecord) -> int:
    """The selection's candidate for the chosen stack: the same row, or one with its stack."""
    chosen = record.candidate(record.chosen_key) or {}
    kept = list(record.selection.candidates.filter(outcome=CandidateOutcome.KEPT))
    same_row = [c for c in kept if c.pk == chosen.get("candidate_id")]
    for candidate in same_row + kept:
        if candidate.stack == chosen.get("stack"):
            return candidate.pk
    raise ValidationError(
        {"candidates": "The chosen stack is no longer a kept candidate; recompute candidates."}
    )


@transaction.atomic
def retest_plan_create(*, actor_user: Any, team: Team, trigger_id: int) -> RetestTrigger:
    """A benchmark plan of the record's chosen stack with the record's plan options: the
    current selection, model and runners supply the changed field."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    trigger = get_scoped_or_404(
        RetestTrigger.objects.select_for_update(of=("self",)).select_related("record__selection"),
        team,
        team_field="record__team",
        pk=trigger_id,
    )
    if trigger.plan_id is not None:
        return trigger
    record = trigger.record
    if record.selection is None:
        raise ValidationError({"selection": "The record's selection was deleted."})
    candidates_choose(
        actor_user=actor_user,
        selection=record.selection,
        candidate_ids=[_chosen_candidate_id(record)],
    )
    trigger.plan = plan_create(
        actor_user=actor_user,
        team=team,
        selection_id=record.selection_id,
        options=_plan_options(record),
        title=f"{record.reference} retest: {trigger.get_kind_display()}",
    )
    trigger.plan_note = PLAN_LIMITS.get(trigger.kind, "")
    trigger.save(update_fields=["plan", "plan_note"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="decision.retest_plan",
        obj=record,
        team=team,
        object_repr=str(record),
        after={
            "trigger_id": trigger.pk,
            "plan_id": trigger.plan_id,
            "changed_field": trigger.changed_field,
        },
        message=trigger.plan_note,
    )
    return trigger


@transaction.atomic
def trigger_acknowledge(*, actor_user: Any, team: Team, trigger_id: int) -> RetestTrigger:
    """Clear a notification; the record stays marked "retest needed" until it is replaced."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    trigger = get_scoped_or_404(
        RetestTrigger.objects.select_related("record"),
        team,
        team_field="record__team",
        pk=trigger_id,
    )
    if RetestTrigger.objects.filter(pk=trigger.pk, acknowledged_at__isnull=True).update(
        acknowledged_at=timezone.now()
    ):
        audit_record(
            actor=Actor.for_user(actor_user),
            action="decision.trigger_acknowledge",
            obj=trigger.record,
            team=team,
            object_repr=str(trigger.record),
            after={"trigger_id": trigger.pk},
        )
        trigger.refresh_from_db()
    return trigger
