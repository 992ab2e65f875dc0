"""Verify the chain against the checkpoints and, when it holds, checkpoint its head.

Shared by ``manage.py audit_verify`` and the periodic Celery task. A chain that fails is never
checkpointed, so the last good head stays the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from apps.audit.chain import ChainBreak, Checkpoint, walk_chain
from apps.audit.checkpoints import append_checkpoint, read_checkpoints
from apps.audit.models import AuditEvent
from apps.audit.selectors import chain_rows


@dataclass(frozen=True)
class Verification:
    broken: ChainBreak | None
    verified: int
    compared_with: Checkpoint | None  # the newest checkpoint the chain was held against
    written: Checkpoint | None


def _moved_to(lost_hash: str | None) -> int | None:
    """The id now holding an event that went missing from its place, if it is still there."""
    if lost_hash is None:
        return None
    return AuditEvent.objects.filter(hash=lost_hash).values_list("id", flat=True).first()


def _explained(broken: ChainBreak) -> ChainBreak:
    moved = _moved_to(broken.lost_hash)
    if moved is None:
        return broken
    lost = f"event {broken.lost_id}" if broken.lost_id else "the event it links to"
    reason = f"{broken.reason}; {lost} is now at event {moved}: ids were renumbered"
    return replace(broken, reason=reason)


def verify_and_checkpoint() -> Verification:
    checkpoints = read_checkpoints()
    walk = walk_chain(chain_rows(), checkpoints)
    newest = checkpoints[-1] if checkpoints else None
    if walk.broken is not None:
        return Verification(_explained(walk.broken), 0, newest, None)
    written = append_checkpoint(walk.head) if walk.head is not None else None
    return Verification(None, walk.head.count if walk.head else 0, newest, written)
