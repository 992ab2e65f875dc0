"""Writes of a decision record's life: create, edit a draft, propose, accept, reject, supersede,
deprecate. Each is one transaction with its audit event; status moves are conditional updates,
so two people acting at once cannot both win.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot
from apps.core.errors import ConflictError
from apps.decisions.baseline import observe
from apps.decisions.choices import (
    DEFAULT_REVALIDATE_AFTER_DAYS,
    EDITABLE_STATUSES,
    DecisionStatus,
    TriggerKind,
    statuses_leading_to,
)
from apps.decisions.evidence_kind import EvidenceKind
from apps.decisions.models import DecisionRecord, DecisionSequence
from apps.decisions.record_parts import snapshot_parts
from apps.selections.models import Selection

# Snapshots of these are too large for an audit row; their changes show in the text fields.
AUDIT_EXCLUDED = ["goal", "candidates", "evidence", "comparison", "baseline"]
MAX_REVALIDATE_DAYS = 3650


@dataclass(frozen=True)
class DecisionText:
    """What an author writes; candidates are named by their selection candidate id."""

    title: str
    chosen_candidate_id: int | None = None
    rationale: str = ""
    dropped: Mapping[int, str] = field(default_factory=dict)
    risks: str = ""
    revalidate_after_days: int = DEFAULT_REVALIDATE_AFTER_DAYS
    retest_kinds: Sequence[str] = tuple(TriggerKind.values)


def _audit(actor_user: Any, record: DecisionRecord, action: str, **extra: Any) -> None:
    audit_record(
        actor=Actor.for_user(actor_user),
        action=action,
        obj=record,
        team=record.team,
        object_repr=str(record),
        **extra,
    )


def _next_number(team: Team) -> int:
    """The team's next record number; the sequence row stays locked until the commit."""
    DecisionSequence.objects.get_or_create(team=team)
    DecisionSequence.objects.filter(team=team).update(last_number=F("last_number") + 1)
    return DecisionSequence.objects.get(team=team).last_number


def _key_of(record: DecisionRecord, candidate_id: Any, field_name: str) -> str:
    for entry in record.candidates:
        if str(entry["candidate_id"]) == str(candidate_id):
            return entry["key"]
    raise ValidationError({field_name: f"Candidate {candidate_id} is not compared in this record."})


def _apply_text(record: DecisionRecord, text: DecisionText) -> None:
    if not text.title.strip():
        raise ValidationError({"title": "A record needs a title."})
    if not 1 <= text.revalidate_after_days <= MAX_REVALIDATE_DAYS:
        raise ValidationError(
            {"revalidate_after_days": f"Must be from 1 to {MAX_REVALIDATE_DAYS} days."}
        )
    unknown = sorted(set(text.retest_kinds) - set(TriggerKind.values))
    if unknown:
        raise ValidationError({"retest_kinds": f"Not trigger kinds: {', '.join(unknown)}."})
    record.title = text.title.strip()[:200]
    record.chosen_key = (
        _key_of(record, text.chosen_candidate_id, "chosen_candidate_id")
        if text.chosen_candidate_id is not None
        else ""
    )
    record.dropped = {
        _key_of(record, candidate_id, "dropped"): reason.strip()
        for candidate_id, reason in text.dropped.items()
        if reason and reason.strip()
    }
    record.rationale = text.rationale.strip()
    record.risks = text.risks.strip()
    record.revalidate_after_days = text.revalidate_after_days
    record.retest_kinds = sorted(set(text.retest_kinds))


def _take_baseline(record: DecisionRecord) -> None:
    chosen = record.candidate(record.chosen_key)
    record.baseline = (
        {}
        if chosen is None
        else observe(
            team_id=record.team_id,
            goal=record.goal,
            chosen=chosen,
            selection_id=record.selection_id,
        )
    )


@transaction.atomic
def record_create(
    *,
    actor_user: Any,
    team: Team,
    selection_id: int,
    text: DecisionText,
    candidate_ids: Sequence[int] = (),
) -> DecisionRecord:
    """A draft about the selection: its goal, candidates and evidence as they are now."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    return _create(
        actor_user=actor_user,
        team=team,
        selection_id=selection_id,
        text=text,
        candidate_ids=candidate_ids,
    )


def _create(
    *,
    actor_user: Any,
    team: Team,
    selection_id: int,
    text: DecisionText,
    candidate_ids: Sequence[int] = (),
    supersedes: DecisionRecord | None = None,
) -> DecisionRecord:
    selection = get_scoped_or_404(Selection.objects.select_related("model"), team, pk=selection_id)
    record = DecisionRecord(
        team=team,
        selection=selection,
        created_by=actor_user,
        supersedes=supersedes,
        **snapshot_parts(selection, candidate_ids),
    )
    _apply_text(record, text)
    _take_baseline(record)
    record.number = _next_number(team)
    record.save()
    _audit(actor_user, record, "decision.create", after=snapshot(record, exclude=AUDIT_EXCLUDED))
    return record


def _locked(team: Team, record_id: int) -> DecisionRecord:
    return get_scoped_or_404(DecisionRecord.objects.select_for_update(), team, pk=record_id)


def _refuse_frozen(record: DecisionRecord) -> None:
    if record.status not in EDITABLE_STATUSES:
        raise ConflictError(
            f"{record.reference} is {record.get_status_display().lower()}: its text is frozen. "
            "A change is a new record that supersedes it.",
            code="frozen",
        )


@transaction.atomic
def record_update(
    *, actor_user: Any, team: Team, record_id: int, text: DecisionText, refresh: bool = False
) -> DecisionRecord:
    """Edit a draft's text; `refresh` re-reads the goal, candidates and evidence first."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    record = _locked(team, record_id)
    _refuse_frozen(record)
    before = snapshot(record, exclude=AUDIT_EXCLUDED)
    if refresh and record.selection_id is not None:
        kept_ids = [entry["candidate_id"] for entry in record.candidates]
        for name, value in snapshot_parts(record.selection, kept_ids).items():
            setattr(record, name, value)
    _apply_text(record, text)
    _take_baseline(record)
    record.save()
    _audit(
        actor_user,
        record,
        "decision.update",
        before=before,
        after=snapshot(record, exclude=AUDIT_EXCLUDED),
        message="goal, candidates and evidence re-read" if refresh else "",
    )
    return record


def _move(
    record: DecisionRecord, *, to: str, actor_user: Any, action: str, message: str = "", **values
) -> DecisionRecord:
    """Conditional update into `to`; ConflictError when the record is no longer where it was."""
    origins = statuses_leading_to(to)
    moved = DecisionRecord.objects.filter(pk=record.pk, status__in=origins).update(
        status=to, updated_at=timezone.now(), **values
    )
    if not moved:
        raise ConflictError(
            f"{record.reference} is {record.get_status_display().lower()}; it cannot become "
            f"{DecisionStatus(to).label.lower()}.",
            code="status",
        )
    before_status = record.status
    record.refresh_from_db()
    _audit(
        actor_user,
        record,
        action,
        before={"status": before_status},
        after={"status": to, **{name: str(value) for name, value in values.items()}},
        message=message,
    )
    return record


def _completeness_errors(record: DecisionRecord) -> dict[str, str]:
    errors = {}
    if not record.chosen_key:
        errors["chosen_candidate_id"] = "Choose the stack the record decides on."
    if not record.rationale:
        errors["rationale"] = "Say why the chosen stack wins."
    missing = [
        entry["key"]
        for entry in record.candidates
        if entry["key"] != record.chosen_key and not record.dropped.get(entry["key"])
    ]
    if missing:
        errors["dropped"] = f"Say why each other candidate was dropped: {', '.join(missing)}."
    return errors


def _simulation_errors(record: DecisionRecord, *, simulation_only: bool) -> dict[str, str]:
    """Marking "simulation only" is for a record whose evidence includes a dry run."""
    kind = record.evidence_kind
    if simulation_only and kind not in (EvidenceKind.SIMULATED, EvidenceKind.MIXED):
        return {
            "simulation_only": f"The evidence of {record.reference} is {kind}, not simulated: "
            "there is no simulation to mark."
        }
    return {}


@transaction.atomic
def record_propose(
    *, actor_user: Any, team: Team, record_id: int, simulation_only: bool = False
) -> DecisionRecord:
    """Freeze a complete draft for review; `simulation_only` owns up to simulated evidence."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    record = _locked(team, record_id)
    errors = _completeness_errors(record) | _simulation_errors(
        record, simulation_only=simulation_only
    )
    if errors and record.status in EDITABLE_STATUSES:
        raise ValidationError(errors)
    return _move(
        record,
        to=DecisionStatus.PROPOSED,
        actor_user=actor_user,
        action="decision.propose",
        proposed_by=actor_user,
        proposed_at=timezone.now(),
        simulation_only=simulation_only,
    )


def _refuse_unmarked_simulation(record: DecisionRecord) -> None:
    if record.evidence_kind == EvidenceKind.SIMULATED and not record.simulation_only:
        raise ValidationError(
            {
                "simulation_only": f"{record.reference} rests on simulated evidence only: no real "
                'engine ran, and it was not proposed as "simulation only". Measure the stacks '
                "on their own engines (a measured plan) or propose a record marked "
                '"simulation only".'
            }
        )


def _require_approver(actor_user: Any, record: DecisionRecord) -> None:
    require_role(user=actor_user, team=record.team, minimum=Role.APPROVER)
    if record.created_by_id == actor_user.pk:
        raise PermissionDenied("The author of a record cannot approve it; ask another approver.")


@transaction.atomic
def record_accept(*, actor_user: Any, team: Team, record_id: int) -> DecisionRecord:
    """An approver other than the author accepts; a record it supersedes becomes superseded."""
    record = _locked(team, record_id)
    _require_approver(actor_user, record)
    if record.status == DecisionStatus.PROPOSED:
        _refuse_unmarked_simulation(record)
    record = _move(
        record,
        to=DecisionStatus.ACCEPTED,
        actor_user=actor_user,
        action="decision.accept",
        decided_by=actor_user,
        decided_at=timezone.now(),
    )
    if record.supersedes_id is not None:
        older = _locked(team, record.supersedes_id)
        _move(
            older,
            to=DecisionStatus.SUPERSEDED,
            actor_user=actor_user,
            action="decision.superseded",
            message=f"superseded by {record.reference}",
            superseded_by=record,
            status_reason=f"Superseded by {record.reference}.",
        )
    return record


# How an approver ends a record's course, and the audit action of each ending.
_CLOSING_ACTIONS = {
    DecisionStatus.REJECTED: "decision.reject",
    DecisionStatus.DEPRECATED: "decision.deprecate",
}


@transaction.atomic
def _close_with_reason(
    actor_user: Any, team: Team, record_id: int, reason: str, to: str
) -> DecisionRecord:
    record = _locked(team, record_id)
    require_role(user=actor_user, team=team, minimum=Role.APPROVER)
    if not reason.strip():
        raise ValidationError(
            {"reason": f"Say why the record is {DecisionStatus(to).label.lower()}."}
        )
    decider = (
        {"decided_by": actor_user, "decided_at": timezone.now()}
        if to == DecisionStatus.REJECTED
        else {}
    )
    return _move(
        record,
        to=to,
        actor_user=actor_user,
        action=_CLOSING_ACTIONS[to],
        message=reason.strip(),
        status_reason=reason.strip(),
        **decider,
    )


def record_reject(*, actor_user: Any, team: Team, record_id: int, reason: str) -> DecisionRecord:
    """An approver turns a proposed record down, saying why."""
    return _close_with_reason(actor_user, team, record_id, reason, DecisionStatus.REJECTED)


def record_deprecate(*, actor_user: Any, team: Team, record_id: int, reason: str) -> DecisionRecord:
    """An accepted choice no longer in use and not replaced by a newer record."""
    return _close_with_reason(actor_user, team, record_id, reason, DecisionStatus.DEPRECATED)


def _candidate_id(record: DecisionRecord, key: str) -> int | None:
    entry = record.candidate(key)
    return entry["candidate_id"] if entry else None


@transaction.atomic
def record_supersede(
    *, actor_user: Any, team: Team, record_id: int, title: str = ""
) -> DecisionRecord:
    """A new draft that supersedes an accepted record, its text copied, its parts re-read.

    The older record stays accepted until the new one is accepted (record_accept).
    """
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    older = _locked(team, record_id)
    if older.status != DecisionStatus.ACCEPTED:
        raise ConflictError(
            f"Only an accepted record can be superseded; {older.reference} is {older.status}.",
            code="status",
        )
    if older.selection_id is None:
        raise ValidationError({"selection": "The record's selection was deleted."})
    ids = [entry["candidate_id"] for entry in older.candidates]
    present = set(older.selection.candidates.filter(pk__in=ids).values_list("pk", flat=True))
    text = DecisionText(
        title=title.strip() or older.title,
        chosen_candidate_id=_candidate_id(older, older.chosen_key),
        rationale=older.rationale,
        dropped={_candidate_id(older, key): reason for key, reason in older.dropped.items()},
        risks=older.risks,
        revalidate_after_days=older.revalidate_after_days,
        retest_kinds=older.retest_kinds,
    )
    if present != set(ids):
        # The candidates were recomputed: the new draft starts from the current ones.
        ids, text = [], DecisionText(title=text.title, risks=text.risks)
    return _create(
        actor_user=actor_user,
        team=team,
        selection_id=older.selection_id,
        text=text,
        candidate_ids=ids,
        supersedes=older,
    )
