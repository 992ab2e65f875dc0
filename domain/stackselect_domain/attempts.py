"""Attempt states on the wire between the server and the runner (docs/runner-protocol.md)."""

from __future__ import annotations

# States in which a runner holds the attempt's lease.
LEASED_STATES = frozenset({"claimed", "running"})
# What a runner may report when it finishes an attempt.
FINISH_STATES: tuple[str, ...] = ("succeeded", "failed", "cancelled")
