"""Figures as every page, message and export writes them, so one count never reads two ways."""

from __future__ import annotations


def grouped(count: float) -> str:
    """A count (tokens, sequences, requests) with thousands separators ("16,384"; the general
    format would write a million as "1e+06"); a fraction keeps one decimal."""
    return f"{count:,.0f}" if float(count).is_integer() else f"{count:,.1f}"
