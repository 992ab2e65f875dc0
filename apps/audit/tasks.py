"""The periodic checkpoint: verify the chain and pin its head outside the database."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.audit.verify import verify_and_checkpoint

CHECKPOINT_TASK = "audit.checkpoint"
logger = logging.getLogger(__name__)


@shared_task(name=CHECKPOINT_TASK, ignore_result=True)
def checkpoint_chain() -> int | None:
    """The checkpointed last id; a broken chain is logged as an error and not checkpointed."""
    result = verify_and_checkpoint()
    if result.broken is not None:
        logger.error(
            "audit chain broken at event %s: %s", result.broken.event_id, result.broken.reason
        )
        return None
    return result.written.last_id if result.written else None
