"""Writing audit events. Callers invoke `audit_record` inside the transaction of their change."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, models
from django.utils import timezone
from stackselect_domain.canonical import canonical_json

from apps.audit.chain import GENESIS_HASH, event_hash
from apps.audit.choices import ActorType
from apps.audit.models import AuditEvent
from apps.core.request_context import current_request_id

# Any constant works; it names the one advisory lock that serialises writers of the chain.
_CHAIN_LOCK_KEY = 7_418_224_001


@dataclass(frozen=True)
class Actor:
    """Who made a change: a user, a runner or the system, with a name snapshot for the record."""

    type: str
    id: str
    name: str

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(ActorType.USER, str(user.pk), user.get_username())

    @classmethod
    def for_runner(cls, runner: Any) -> Actor:
        return cls(ActorType.RUNNER, str(runner.pk), str(runner.name))

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(ActorType.SYSTEM, "", name)


def _json_ready(value: Any) -> Any:
    """Store exactly what gets hashed: round-trip through canonical JSON."""
    return None if value is None else json.loads(canonical_json(value))


def _lock_chain() -> None:
    if not connection.in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])
    # SQLite runs transactions in IMMEDIATE mode (settings), so writers are already serialised.


@dataclass(frozen=True)
class AuditEntry:
    """One event to append, as `audit_record` takes it; `audit_record_many` appends many."""

    actor: Actor
    action: str
    obj: models.Model | None = None
    object_type: str | None = None
    object_id: str | int | None = None
    object_repr: str | None = None
    team: Any = None
    before: Any = None
    after: Any = None
    message: str = ""

    def fields(self, occurred_at: datetime, request_id: str) -> dict[str, Any]:
        obj = self.obj
        object_id = self.object_id
        if object_id is None:
            object_id = obj.pk if obj is not None else ""
        object_repr = self.object_repr if self.object_repr is not None else str(obj or "")
        return {
            "occurred_at": occurred_at,
            "actor_type": str(self.actor.type),
            "actor_id": self.actor.id,
            "actor_name": self.actor.name[:150],
            "team_id": self.team.pk if self.team is not None else None,
            "request_id": request_id,
            "action": self.action,
            "object_type": self.object_type or (obj._meta.label_lower if obj is not None else ""),
            "object_id": str(object_id),
            "object_repr": object_repr[:200],
            "before": _json_ready(self.before),
            "after": _json_ready(self.after),
            "message": self.message,
        }


def audit_record(
    *,
    actor: Actor,
    action: str,
    obj: models.Model | None = None,
    object_type: str | None = None,
    object_id: str | int | None = None,
    object_repr: str | None = None,
    team: Any = None,
    before: Any = None,
    after: Any = None,
    message: str = "",
) -> AuditEvent:
    """Append one event to the chain; raises if called outside a transaction."""
    entry = AuditEntry(
        actor, action, obj, object_type, object_id, object_repr, team, before, after, message
    )
    return audit_record_many([entry])[0]


def audit_record_many(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """Append the events in order, each linked to the one before, with one lock, one read of
    the head and one INSERT: a change of many rows costs the queries of a change of one.

    The lock serialises every writer, so the ids one INSERT takes follow the chain's order.
    """
    if not entries:
        return []
    _lock_chain()
    occurred_at, request_id = timezone.now().astimezone(UTC), current_request_id()
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    prev_hash = last or GENESIS_HASH
    events = []
    for entry in entries:
        fields = entry.fields(occurred_at, request_id)
        digest = event_hash(prev_hash, hashed_view(fields))
        events.append(AuditEvent(prev_hash=prev_hash, hash=digest, **fields))
        prev_hash = digest
    return AuditEvent.objects.bulk_create(events)


def hashed_view(fields: dict[str, Any]) -> dict[str, Any]:
    """The canonical values of an event's fields, the same whether fresh or read back."""
    view = dict(fields)
    view["occurred_at"] = fields["occurred_at"].astimezone(UTC).isoformat()
    return view
