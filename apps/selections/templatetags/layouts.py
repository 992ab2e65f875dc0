"""Layout rules the candidate rows need, read from the stack as stored (Candidate.stack)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.selections.estimator import Parallelism

register = template.Library()


@register.filter
def copies_of_one_replica(stack: dict[str, Any]) -> int:
    """dp when the layout is dp copies of one replica that each run alone (whose figures the
    row shows), else 0: one replica, or replicas that share an expert group."""
    layout = Parallelism(tp=stack["tp"], pp=stack["pp"], ep=stack["ep"], dp=stack["dp"])
    return layout.dp if layout.dp > 1 and layout.replicas_run_alone else 0


@register.simple_tag
def in_flight(count: int, replicas: int) -> str:
    """A latency's operating point: one replica's requests in flight, and on a stack of
    several replicas the deployment's count too (a reader takes a bare count for the whole)."""
    if replicas > 1:
        return f"{count} in flight per replica ({count * replicas} over the {replicas} replicas)"
    return f"{count} in flight"
