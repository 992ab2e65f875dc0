"""A record's figures worded once, for its pages and its Markdown export alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from apps.decisions.export import arrival_text, estimate_text, length_text
from apps.selections.workload_words import precision_text, sharing_text

register = template.Library()


@register.filter(name="estimate_text")
def estimate_text_filter(estimate: Mapping[str, Any] | None) -> str:
    """A candidate's predicted figures, each with its method and band, as the export says them."""
    return estimate_text(estimate or {})


@register.filter(name="length_text")
def length_text_filter(spec: Mapping[str, Any]) -> str:
    """A goal's input or output length distribution, as the export words it."""
    return length_text(spec)


@register.filter(name="arrival_text")
def arrival_text_filter(arrival: Mapping[str, Any]) -> str:
    """A goal's arrival process, as the export words it."""
    return arrival_text(arrival)


@register.filter(name="sharing_text")
def sharing_text_filter(workload: Mapping[str, Any]) -> str:
    """A goal's shared prefix, tool share and turns, as the export words them."""
    return sharing_text(workload)


@register.filter(name="precision_text")
def precision_text_filter(workload: Mapping[str, Any]) -> str:
    """A goal's precisions and KV cache type, as the export words them."""
    return precision_text(workload)
