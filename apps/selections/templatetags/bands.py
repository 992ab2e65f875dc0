"""The error bands' fixed wording, kept in one place for the pages and the exported record."""

from __future__ import annotations

from django import template

from apps.selections.error_bands import OUTSIDE_BAND

register = template.Library()


@register.simple_tag
def outside_band() -> str:
    return OUTSIDE_BAND
