"""A record's figures worded once, for its pages and its Markdown export alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from apps.decisions.export import estimate_text, failed_text
from apps.selections.workload_words import arrival_text, length_text, precision_text, sharing_text

register = template.Library()


@register.filter(name="estimate_text")
def estimate_text_filter(estimate: Mapping[str, Any] | None) -> str:
    """A candidate's predicted figures, each with its method and band, as the export says them."""
    return estimate_text(estimate or {})


# A goal's lengths, arrival, sharing and precisions, as the export words them.
register.filter("length_text", length_text)
register.filter("arrival_text", arrival_text)
register.filter("sharing_text", sharing_text)
register.filter("precision_text", precision_text)
# How many of a load point's requests failed, as the export counts them.
register.filter("failed_text", failed_text)
