"""The hash chain: what goes into an event's hash and how a chain is checked. No Django here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stackselect_domain.canonical import canonical_hash

GENESIS_HASH = "0" * 64
HASHED_FIELDS = (
    "occurred_at",
    "actor_type",
    "actor_id",
    "actor_name",
    "team_id",
    "request_id",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "before",
    "after",
    "message",
)


def event_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    """sha256 over the previous event's hash followed by this event's canonical JSON."""
    return canonical_hash({name: fields[name] for name in HASHED_FIELDS}, prefix=prev_hash)


@dataclass(frozen=True)
class ChainBreak:
    event_id: int
    reason: str


def find_first_break(
    events: Iterable[tuple[int, str, str, Mapping[str, Any]]],
) -> ChainBreak | None:
    """Walk (id, prev_hash, hash, fields) in id order; return the first event that does not fit."""
    expected_prev = GENESIS_HASH
    for event_id, prev_hash, stored_hash, fields in events:
        if prev_hash != expected_prev:
            return ChainBreak(event_id, "prev_hash does not match the hash of the event before it")
        if event_hash(prev_hash, fields) != stored_hash:
            return ChainBreak(event_id, "content does not match its hash (the row was altered)")
        expected_prev = stored_hash
    return None
