"""How a latency's operating point is worded wherever a user reads it (pages, hints, export)."""

from __future__ import annotations


def in_flight(count: int, replicas: int) -> str:
    """One replica's requests in flight, and on a stack of several replicas the deployment's
    count too: a reader takes a bare count for the whole deployment."""
    if replicas > 1:
        return f"{count} in flight per replica ({count * replicas} over the {replicas} replicas)"
    return f"{count} in flight"
