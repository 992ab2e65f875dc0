"""Parsing uploaded request traces (CSV or JSONL) and turning them into workload documents.

Columns: timestamp (seconds), input_tokens, output_tokens and an optional prefix_id. Parsing
only splits text into rows; `workload.trace_summary` (called by the service) validates the
numbers and derives the rate and distributions, so its field-named ValueErrors reach the user.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np
from stackselect_domain.workload import TraceSummary

REQUIRED_COLUMNS = ("timestamp", "input_tokens", "output_tokens")
# An empirical distribution stored in a selection keeps at most this many values: evenly spaced
# quantiles of the observed lengths, which preserve the shape of a larger trace.
MAX_EMPIRICAL_VALUES = 2000


def _number_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        return value


def _csv_rows(text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [name for name in REQUIRED_COLUMNS if name not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"file: the CSV header lacks {', '.join(missing)}")
    rows = []
    for row in reader:
        parsed = {key: _number_or_text(row[key]) for key in REQUIRED_COLUMNS}
        parsed["prefix_id"] = (row.get("prefix_id") or "").strip() or None
        rows.append(parsed)
    return rows


def _jsonl_rows(text: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"file: line {number} is not JSON ({error.msg})") from error
        if not isinstance(row, dict):
            raise ValueError(f"file: line {number} must be a JSON object")
        rows.append(row)
    return rows


def parse_trace(content: bytes, *, filename: str = "") -> list[dict[str, Any]]:
    """Rows of a CSV or JSONL trace; the format is told by the extension, else by the first
    character (a JSONL file starts with '{')."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError("file: a trace must be UTF-8 text") from error
    lowered = filename.lower()
    is_json = lowered.endswith((".jsonl", ".ndjson", ".json")) or (
        not lowered.endswith(".csv") and text.lstrip().startswith("{")
    )
    rows = _jsonl_rows(text) if is_json else _csv_rows(text)
    if not rows:
        raise ValueError("file: the trace has no rows")
    return rows


def _quantiles(values: tuple[int, ...]) -> list[int]:
    if len(values) <= MAX_EMPIRICAL_VALUES:
        return list(values)
    points = np.linspace(0, 100, MAX_EMPIRICAL_VALUES)
    return [round(float(v)) for v in np.percentile(np.asarray(values), points)]


def summary_document(summary: TraceSummary) -> dict[str, Any]:
    """What WorkloadTrace.summary stores: the figures shown on the page."""
    return {
        "requests": summary.requests,
        "duration_s": round(summary.duration_s, 3),
        "mean_rate_rps": round(summary.mean_rate_rps, 4),
        "burstiness_cv": round(summary.burstiness_cv, 4),
        "gamma_shape": None if summary.gamma_shape is None else round(summary.gamma_shape, 4),
        "isl_mean": round(summary.isl_mean, 1),
        "osl_mean": round(summary.osl_mean, 1),
        "prefix_share": round(summary.prefix_share, 4),
    }


def workload_fragment(summary: TraceSummary) -> dict[str, Any]:
    """The parts of a workload document a trace decides: empirical lengths and the arrival.

    The prefix share is shown but not applied: a trace gives prefix ids, not prefix lengths.

    A trace is replayed as a gamma process with its own mean rate and burstiness (shape
    1 / CV^2), so the rate search can still scale it; a perfectly regular trace is constant.
    """
    if summary.gamma_shape is None:
        arrival = {"process": "constant", "rate_rps": round(summary.mean_rate_rps, 6)}
    else:
        arrival = {
            "process": "gamma",
            "rate_rps": round(summary.mean_rate_rps, 6),
            "burstiness": round(summary.gamma_shape, 6),
        }
    return {
        "isl": {"kind": "empirical", "values": _quantiles(summary.input_lengths)},
        "osl": {"kind": "empirical", "values": _quantiles(summary.output_lengths)},
        "arrival": arrival,
    }
