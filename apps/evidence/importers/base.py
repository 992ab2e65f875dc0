"""What every importer returns, and the small helpers they share.

An importer maps a benchmark tool's own files onto our per-request record schema and checks
the result with the same validation as a runner upload. Whatever it had to convert (units,
names, definitions) is written in `notes`, so a reader knows how the numbers were derived.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.evidence.schema import (
    TIMEOUT_ERROR,
    LoadPoint,
    LoadPointSamples,
    samples_from_records,
)

MS = 1e-3
NS = 1e-9


@dataclass(frozen=True)
class ImportedRun:
    """A tool's results as load points of validated samples.

    `identity` holds only the identity fields the files state (harness tool and version,
    model, ...); the caller merges it with the job's identity. `requested_isl`/`_osl` are the
    mean lengths the tool was asked for, when its files say so.
    """

    identity: dict[str, Any]
    load_points: list[LoadPointSamples]
    notes: list[str]
    requested_isl: float | None = None
    requested_osl: float | None = None


@dataclass
class RecordBuilder:
    """Collects records in send order and numbers them 0..n-1."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        *,
        send_s: float | None,
        ttft_s: float | None,
        itl_s: list[float] | None,
        e2e_s: float | None,
        input_tokens: int,
        output_tokens: int,
        error: str | None,
        status: int | None = None,
    ) -> None:
        self.records.append(
            {
                "index": 0,
                "send_s": send_s,
                "ttft_s": ttft_s,
                "itl_s": itl_s,
                "e2e_s": e2e_s,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "error": error,
                "status": status,
            }
        )

    def samples(
        self, load_point: LoadPoint, duration_s: float, *, multi_token_chunks: bool
    ) -> LoadPointSamples:
        ordered = sorted(
            self.records, key=lambda record: (record["send_s"] is None, record["send_s"] or 0)
        )
        for position, record in enumerate(ordered):
            record["index"] = position
        return samples_from_records(
            ordered, load_point, duration_s, multi_token_chunks=multi_token_chunks
        )


class ShapeError(ValueError):
    """A tool file that parses but is not laid out as the tool writes it: a number where a list
    belongs, a string where an object does, an infinite token count. The message names where."""


def require(mapping: Any, key: str, where: str) -> Any:
    """mapping[key], or a ValueError that names the file part and the key."""
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise ValueError(f"{where}: missing {key!r}")
    return mapping[key]


def obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ShapeError(f"{where}: must be an object, got {type(value).__name__}")
    return value


def optional_obj(value: Any, where: str) -> Mapping[str, Any]:
    """An object, or {} for a missing (null, empty) one."""
    return obj(value, where) if value else {}


def items(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"{where}: must be a list, got {type(value).__name__}")
    return value


def optional_items(value: Any, where: str) -> list[Any]:
    """A list, or [] for a missing (null, empty) one."""
    return items(value, where) if value else []


def _finite_json_number(value: Any) -> bool:
    """Text, true/false and infinities are not how the tools write a number."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def number(value: Any, where: str) -> float:
    """A finite JSON number."""
    if not _finite_json_number(value):
        raise ShapeError(f"{where}: must be a finite number, got {value!r}")
    return float(value)


def optional_number(value: Any, where: str) -> float | None:
    return None if value is None else number(value, where)


def count(value: Any, where: str) -> int:
    """A token count or concurrency: a JSON number, a fractional one truncated as int() does."""
    if not _finite_json_number(value):
        raise ShapeError(f"{where}: must be a whole number, got {value!r}")
    return int(value)


def optional_text(value: Any, where: str) -> str | None:
    """A message, or None for a missing (null, empty) one."""
    if not value:
        return None
    if not isinstance(value, str):
        raise ShapeError(f"{where}: must be text, got {value!r}")
    return value


def scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def error_text(message: str | None) -> str | None:
    """Our error string: timeouts spelled one way so they can be counted."""
    if not message:
        return None
    lowered = message.lower()
    return TIMEOUT_ERROR if "timeout" in lowered or "timed out" in lowered else message


def read_json_lines(text: str) -> list[dict[str, Any]]:
    """One JSON object per non-blank line; the line number is named when one is broken."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number}: not JSON ({exc.msg})") from exc
    return rows


def offsets_from_first(starts: Sequence[float | None]) -> list[float | None]:
    """Send times relative to the first request sent in the window."""
    known = [start for start in starts if start is not None]
    first = min(known) if known else 0.0
    return [None if start is None else start - first for start in starts]
