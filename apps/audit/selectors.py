"""Reading the audit trail: team scoping, the chain check, per-event diffs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from apps.audit.chain import HASHED_FIELDS, ChainBreak, find_first_break
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


def chain_rows() -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """(id, prev_hash, hash, hashed fields) of every event in id order, read in batches."""
    columns = ["id", "prev_hash", "hash", *HASHED_FIELDS]
    for row in (
        AuditEvent.objects.order_by("id").values(*columns).iterator(chunk_size=_VERIFY_BATCH)
    ):
        event_id, prev_hash, stored_hash = row.pop("id"), row.pop("prev_hash"), row.pop("hash")
        yield event_id, prev_hash, stored_hash, hashed_view(row)


def audit_chain_first_break() -> ChainBreak | None:
    return find_first_break(chain_rows())


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
