"""Figures and documents as pages show them: a nested document (a plan's identity, a job's
stack, a runner's probe) as table rows of named values rather than a Python dict, and counts and
errors in the wording the messages use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from stackselect_domain.words import grouped

register = template.Library()


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _rows(value: Any, key: str) -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        if not value:
            return [(key, "—")] if key else []
        rows: list[tuple[str, str]] = []
        for name, inner in value.items():
            rows += _rows(inner, f"{key}.{name}" if key else str(name))
        return rows
    if isinstance(value, list | tuple):
        if all(not isinstance(item, Mapping | list | tuple) for item in value):
            return [(key, ", ".join(_text(item) for item in value) or "—")]
        rows = []
        for index, item in enumerate(value):
            rows += _rows(item, f"{key}[{index}]")
        return rows
    return [(key, _text(value))]


def _is_number(value: Any) -> bool:
    """A figure to format; a bool is not one, though Python counts it an int."""
    return isinstance(value, int | float) and not isinstance(value, bool)


@register.filter
def fact_rows(document: Any) -> list[tuple[str, str]]:
    """(dotted name, value) per leaf: {"engine": {"name": "vllm"}} gives ("engine.name",
    "vllm"); a list of plain values is one row, a list of objects numbers its items from 0, as
    the API's JSON and its field errors do ("load_points[0].rate_rps")."""
    return _rows(document, "")


@register.filter
def signed_percent(fraction: Any) -> str:
    """A relative error as a signed percentage (-0.47 gives "-47%"); "—" when missing."""
    return f"{fraction * 100:+.0f}%" if _is_number(fraction) else "—"


@register.filter(name="grouped")
def grouped_filter(count: Any) -> str:
    """A count as every message writes it (16,384); "—" when missing."""
    return grouped(count) if _is_number(count) else "—"
