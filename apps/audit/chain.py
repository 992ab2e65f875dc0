"""The hash chain: what goes into an event's hash and how a chain is checked. No Django here.

A chain that checks out from the genesis hash can still have lost its tail, been renumbered or
been rewritten with recomputed hashes by whoever owns the table. Checkpoints kept outside the
database (apps/audit/checkpoints.py) pin the head as it was; `walk_chain` checks both at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
    """The first event that does not fit; `lost_hash` is the hash of an event that went missing
    from id `lost_id` (None: not known exactly), so a caller with the database can tell whether
    it moved to another id."""

    event_id: int
    reason: str
    lost_hash: str | None = None
    lost_id: int | None = None


@dataclass(frozen=True)
class Checkpoint:
    """The chain's head as a verify saw it: first and last id, events between, the head's hash,
    and (id, hash) of each event it was the first checkpoint to see, so a later rewrite with
    recomputed hashes can be named at the event it began with."""

    first_id: int
    last_id: int
    count: int
    head_hash: str
    at: str
    hashes: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class ChainWalk:
    broken: ChainBreak | None
    head: Checkpoint | None  # what was walked, if anything; `at` is left empty


def _missing_up_to(checkpoint: Checkpoint, last_seen_id: int | None, seen: int) -> ChainBreak:
    """The checkpointed head is not where it was: name the first event that must be gone."""
    lower = checkpoint.first_id if last_seen_id is None else last_seen_id + 1
    missing = checkpoint.count - seen
    where = f"the checkpoint of {checkpoint.at} recorded {checkpoint.count} events up to event "
    where += f"{checkpoint.last_id}, {seen} remain"
    if missing == checkpoint.last_id - lower + 1:
        reason = f"event {lower} is missing ({where})"
    else:
        reason = f"events from {lower} to {checkpoint.last_id} are missing or renumbered ({where})"
    return ChainBreak(lower, reason, checkpoint.head_hash, checkpoint.last_id)


def _unlinked(
    event_id: int, last_seen_id: int | None, prev_hash: str, first_checkpointed: int | None
) -> ChainBreak:
    """An intact event whose predecessor is not the event before it: something was taken out."""
    if last_seen_id is None:
        if first_checkpointed is not None and first_checkpointed < event_id:
            reason = (
                f"event {first_checkpointed} is missing: the checkpoints start the chain there, "
                f"and event {event_id} links to an event that is gone"
            )
            return ChainBreak(first_checkpointed, reason, lost_hash=prev_hash)
        reason = f"event {event_id} links to an event before it, and there is none"
        return ChainBreak(event_id, reason, lost_hash=prev_hash)
    if event_id > last_seen_id + 1:
        missing = last_seen_id + 1
        reason = f"event {missing} is missing: event {event_id} links to an event that is gone"
        lost_id = missing if event_id == missing + 1 else None
        return ChainBreak(missing, reason, prev_hash, lost_id)
    reason = f"prev_hash does not match the hash of event {last_seen_id} before it"
    return ChainBreak(event_id, reason, lost_hash=prev_hash)


def walk_chain(
    events: Iterable[tuple[int, str, str, Mapping[str, Any]]],
    checkpoints: Sequence[Checkpoint] = (),
    *,
    start: Checkpoint | None = None,
) -> ChainWalk:
    """Walk (id, prev_hash, hash, fields) in id order against the checkpoints; stop at the first
    event that does not fit its hash, its predecessor or a checkpoint.

    With `start` (a checkpoint an earlier walk verified), `events` are only those after its
    head, and the walk goes on from that head instead of from the genesis hash.
    """
    pending = sorted(checkpoints, key=lambda c: c.last_id)
    first_checkpointed = min((c.first_id for c in checkpoints), default=None)
    recorded = {event_id: hash_ for c in checkpoints for event_id, hash_ in c.hashes}
    recorded_hashes = set(recorded.values())
    newest_id = max((c.last_id for c in checkpoints), default=0)
    unseen: list[tuple[int, str]] = []  # events no checkpoint has recorded yet
    matched: Checkpoint | None = start
    expected_prev, first_id, last_id, seen = GENESIS_HASH, None, None, 0
    if start is not None:
        expected_prev, first_id, last_id, seen = (
            start.head_hash,
            start.first_id,
            start.last_id,
            start.count,
        )
        pending = [c for c in pending if c.last_id > start.last_id]

    def walked(broken: ChainBreak | None) -> ChainWalk:
        if first_id is None or last_id is None:
            return ChainWalk(broken, None)
        head = Checkpoint(first_id, last_id, seen, expected_prev, "", tuple(unseen))
        return ChainWalk(broken, head)

    for event_id, prev_hash, stored_hash, fields in events:
        if pending and pending[0].last_id < event_id:
            return walked(_missing_up_to(pending[0], last_id, seen))
        if event_hash(prev_hash, fields) != stored_hash:
            return walked(
                ChainBreak(event_id, "content does not match its hash (the row was altered)")
            )
        if event_id in recorded and stored_hash not in recorded_hashes:
            # Not an event that moved (its hash would be recorded under another id): rewritten.
            reason = (
                "its hash differs from the one a checkpoint recorded for it: the event was "
                "rewritten and the hashes after it recomputed"
            )
            return walked(ChainBreak(event_id, reason))
        if prev_hash != expected_prev:
            return walked(_unlinked(event_id, last_id, prev_hash, first_checkpointed))
        first_id = event_id if first_id is None else first_id
        expected_prev, last_id, seen = stored_hash, event_id, seen + 1
        if event_id > newest_id:
            unseen.append((event_id, stored_hash))
        while pending and pending[0].last_id == event_id:
            checkpoint = pending.pop(0)
            if stored_hash != checkpoint.head_hash or seen != checkpoint.count:
                since = f"after event {matched.last_id}" if matched else "from the start"
                reason = (
                    f"does not match the checkpoint of {checkpoint.at} (hash or count differ): "
                    f"the chain was rewritten {since} up to this event"
                )
                return walked(ChainBreak(event_id, reason))
            matched = checkpoint
    if pending:
        return walked(_missing_up_to(pending[0], last_id, seen))
    return walked(None)


def find_first_break(
    events: Iterable[tuple[int, str, str, Mapping[str, Any]]],
) -> ChainBreak | None:
    """The chain's own check, without checkpoints."""
    return walk_chain(events).broken
