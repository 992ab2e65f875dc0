"""Writing audit events. Callers invoke `audit_record` inside the transaction of their change."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC
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
    _lock_chain()
    fields: dict[str, Any] = {
        "occurred_at": timezone.now().astimezone(UTC),
        "actor_type": str(actor.type),
        "actor_id": actor.id,
        "actor_name": actor.name[:150],
        "team_id": team.pk if team is not None else None,
        "request_id": current_request_id(),
        "action": action,
        "object_type": object_type or (obj._meta.label_lower if obj is not None else ""),
        "object_id": str(
            object_id if object_id is not None else (obj.pk if obj is not None else "")
        ),
        "object_repr": (object_repr if object_repr is not None else str(obj or ""))[:200],
        "before": _json_ready(before),
        "after": _json_ready(after),
        "message": message,
    }
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    prev_hash = last or GENESIS_HASH
    digest = event_hash(prev_hash, hashed_view(fields))
    return AuditEvent.objects.create(prev_hash=prev_hash, hash=digest, **fields)


def hashed_view(fields: dict[str, Any]) -> dict[str, Any]:
    """The canonical values of an event's fields, the same whether fresh or read back."""
    view = dict(fields)
    view["occurred_at"] = fields["occurred_at"].astimezone(UTC).isoformat()
    return view
