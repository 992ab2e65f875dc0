"""Layout rules the candidate rows need, read from the stack as stored (Candidate.stack)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.selections.estimator import Parallelism
from apps.selections.operating_point import in_flight

register = template.Library()


@register.filter
def copies_of_one_replica(stack: dict[str, Any]) -> int:
    """dp when the layout is dp copies of one replica that each run alone (whose figures the
    row shows), else 0: one replica, or replicas that share an expert group."""
    layout = Parallelism.of_stack(stack)
    return layout.dp if layout.dp > 1 and layout.replicas_run_alone else 0


register.simple_tag(in_flight, name="in_flight")
