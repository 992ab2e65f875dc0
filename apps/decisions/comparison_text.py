"""The record's comparison verdicts in Markdown: quality flags and the fairness checklist.

A candidate flagged "faster but worse" or "worse" says so beside its probe score; a checklist
item the comparison did not meet is listed as a warning, so an exported record never reads as
a fair comparison when it was not one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STATUS_WORDS = {"met": "met", "not_met": "NOT MET", "unknown": "unknown"}


def _percent(value: Any) -> str:
    return "missing" if value is None else f"{100 * value:.0f}%"


def _quality_text(quality: Mapping[str, Any] | None) -> str:
    if not quality:
        return "not probed"
    if quality.get("mode") == "simulated":
        return "simulated (the simulated engine does not answer; not a quality measurement)"
    return f"{quality['correct']}/{quality['total']} correct ({_percent(quality.get('rate'))})"


def _row(row: Mapping[str, Any], reference: str | None) -> str:
    quality = row.get("quality") or {}
    if row["candidate_key"] == reference:
        agreement, verdict = "reference", "reference"
    else:
        agreement = _percent(quality.get("agreement_with_reference"))
        verdict = f"**{quality['flag_words']}**" if quality.get("flag") else "not flagged"
    settings = (row.get("tuning") or {}).get("settings") or {}
    tuned = ", ".join(f"{key}={value}" for key, value in settings.items()) or "engine defaults"
    return (
        f"| {row['candidate_key']} | {_quality_text(quality)} | {agreement} | {verdict} | {tuned} |"
    )


def comparison_lines(comparison: Mapping[str, Any]) -> list[str]:
    """The '### Comparison' block of section 3; nothing when the record has no comparison."""
    if not comparison:
        return []
    reference = comparison.get("reference_key")
    tolerance = comparison.get("quality_tolerance")
    lines = [
        "### Comparison",
        "",
        f"- Quality tolerance: {tolerance} below the reference"
        + (f" (candidate {reference})" if reference else ""),
        "",
        "| Candidate | Quality probe | Agreement with the reference | Quality verdict "
        "| Settings compared |",
        "|---|---|---|---|---|",
        *(_row(row, reference) for row in comparison.get("candidates", [])),
        "",
        "| Fair-comparison item | Status | Detail |",
        "|---|---|---|",
        *(
            f"| {item['label']} | {STATUS_WORDS[item['status']]} | {item['detail']} |"
            for item in comparison.get("checklist", [])
        ),
    ]
    missed = comparison.get("missed") or []
    if missed:
        lines += ["", f"> **This comparison misses:** {'; '.join(missed)}."]
    return lines
