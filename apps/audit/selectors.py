"""Reading the audit trail: team scoping, the chain check, per-event diffs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from apps.audit.chain import HASHED_FIELDS, ChainBreak, Checkpoint, find_first_break, walk_chain
from apps.audit.checkpoints import CheckpointFileError, newest_checkpoint
from apps.audit.models import AuditEvent
from apps.audit.services import hashed_view

_VERIFY_BATCH = 2000


def audit_events_visible_to(*, user: Any, team: Any) -> QuerySet[AuditEvent]:
    """Staff read every event; everyone else reads only the current team's."""
    events = AuditEvent.objects.all()
    if user.is_staff:
        return events
    if team is None:
        return events.none()
    return events.filter(team=team)


def chain_rows(*, after_id: int = 0) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """(id, prev_hash, hash, hashed fields) of every event (after `after_id`) in id order,
    read in batches."""
    columns = ["id", "prev_hash", "hash", *HASHED_FIELDS]
    events = AuditEvent.objects.filter(id__gt=after_id).order_by("id").values(*columns)
    for row in events.iterator(chunk_size=_VERIFY_BATCH):
        event_id, prev_hash, stored_hash = row.pop("id"), row.pop("prev_hash"), row.pop("hash")
        yield event_id, prev_hash, stored_hash, hashed_view(row)


def _checkpoint_holds(checkpoint: Checkpoint) -> ChainBreak | None:
    """The checkpointed head is still there, with its hash, and as many events up to it."""
    head = AuditEvent.objects.filter(pk=checkpoint.last_id).values_list("hash", flat=True).first()
    events = AuditEvent.objects.filter(id__gte=checkpoint.first_id, id__lte=checkpoint.last_id)
    if head == checkpoint.head_hash and events.count() == checkpoint.count:
        return None
    reason = (
        f"does not match the checkpoint of {checkpoint.at} (missing, hash or count differ): "
        f"the chain was changed up to this event since it was last verified"
    )
    return ChainBreak(checkpoint.last_id, reason, checkpoint.head_hash, checkpoint.last_id)


def audit_chain_first_break() -> ChainBreak | None:
    """The first break after the newest checkpoint, which a full verify (`audit_verify`, the
    periodic task) checked: a page view walks only the events written since, not the whole
    chain. Without a readable checkpoint the whole chain is walked."""
    try:
        newest = newest_checkpoint()
    except CheckpointFileError:
        newest = None
    if newest is None:
        return find_first_break(chain_rows())
    broken = _checkpoint_holds(newest)
    if broken is not None:
        return broken
    return walk_chain(chain_rows(after_id=newest.last_id), start=newest).broken


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any
    kind: str  # added, removed, changed


def event_diff(event: AuditEvent) -> list[FieldChange]:
    before = event.before if isinstance(event.before, dict) else {}
    after = event.after if isinstance(event.after, dict) else {}
    changes = []
    for key in sorted(set(before) | set(after)):
        if key not in before:
            changes.append(FieldChange(key, None, after[key], "added"))
        elif key not in after:
            changes.append(FieldChange(key, before[key], None, "removed"))
        elif before[key] != after[key]:
            changes.append(FieldChange(key, before[key], after[key], "changed"))
    return changes
