"""The error bands' fixed wording, kept in one place for the pages and the exported record.

It lives in this tag module so that the candidate rows' cache key, which holds the source of
every tag library the rows load, changes with it."""

from __future__ import annotations

from django import template

register = template.Library()

OUTSIDE_BAND = (
    "measured on other engines or hardware than this stack's, so no measured bound for it"
)


@register.simple_tag
def outside_band() -> str:
    return OUTSIDE_BAND
