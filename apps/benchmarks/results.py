"""Result uploads: unzip within a size limit, validate, and summarise with pandas.

A bad upload raises UploadError naming the field, and the caller stores nothing. A metric that
cannot be computed (no successful request) is None, never zero.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

GZIP_WBITS = 16 + zlib.MAX_WBITS
META_KEYS = ("load_point", "started_at", "duration_s", "engine", "harness")


class UploadError(ValueError):
    """The upload is malformed; the message names the field."""


class UploadTooLarge(UploadError):
    pass


@dataclass(frozen=True)
class ParsedUpload:
    load_point_index: int
    chunk_index: int
    chunk_count: int
    records: list[dict[str, Any]]
    meta: dict[str, Any]
    duration_s: float | None


def gunzip_limited(body: bytes, *, max_bytes: int) -> bytes:
    """Decompress a gzip body, refusing more than max_bytes of output (a gzip bomb)."""
    decompressor = zlib.decompressobj(GZIP_WBITS)
    try:
        raw = decompressor.decompress(body, max_bytes + 1)
    except zlib.error as error:
        raise UploadError(f"body: not valid gzip ({error})") from error
    if len(raw) > max_bytes:
        raise UploadTooLarge(f"body: more than {max_bytes} bytes once decompressed")
    if not decompressor.eof:
        raise UploadError("body: the gzip stream is truncated")
    return raw


def _whole(data: Mapping[str, Any], key: str, where: str, *, minimum: int = 0) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UploadError(f"{where}{key}: must be a whole number >= {minimum}")
    return value


def _optional_number(record: Mapping[str, Any], key: str, where: str) -> None:
    value = record.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UploadError(f"{where}{key}: must be a finite number or null")
    if value < 0:
        raise UploadError(f"{where}{key}: must not be negative")


def _check_record(record: Any, position: int) -> dict[str, Any]:
    where = f"records[{position}]."
    if not isinstance(record, dict):
        raise UploadError(f"records[{position}]: must be an object")
    _whole(record, "index", where)
    for key in ("input_tokens", "output_tokens"):
        if record.get(key) is not None:
            _whole(record, key, where)
    for key in ("send_s", "ttft_s", "e2e_s"):
        _optional_number(record, key, where)
    if record.get("send_s") is None:
        raise UploadError(f"{where}send_s: is required")
    gaps = record.get("itl_s", [])
    if not isinstance(gaps, list) or not all(
        isinstance(gap, int | float) and not isinstance(gap, bool) and math.isfinite(gap)
        for gap in gaps
    ):
        raise UploadError(f"{where}itl_s: must be a list of numbers")
    if record.get("error") is not None and not isinstance(record["error"], str):
        raise UploadError(f"{where}error: must be a string or null")
    return record


def parse_upload(raw: bytes, *, load_point_count: int) -> ParsedUpload:
    """Check the decompressed JSON body of POST .../results (runner/PROTOCOL.md)."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UploadError(f"body: not JSON ({error})") from error
    if not isinstance(document, dict):
        raise UploadError("body: must be a JSON object")
    index = _whole(document, "load_point_index", "")
    if index >= load_point_count:
        raise UploadError(f"load_point_index: the plan has {load_point_count} load point(s)")
    chunk_count = _whole(document, "chunk_count", "", minimum=1) if "chunk_count" in document else 1
    chunk_index = _whole(document, "chunk_index", "") if "chunk_index" in document else 0
    if chunk_index >= chunk_count:
        raise UploadError("chunk_index: must be below chunk_count")
    records = document.get("records")
    if not isinstance(records, list):
        raise UploadError("records: must be a list")
    checked = [_check_record(record, position) for position, record in enumerate(records)]
    duration = document.get("duration_s")
    if duration is not None:
        _optional_number(document, "duration_s", "")
    return ParsedUpload(
        load_point_index=index,
        chunk_index=chunk_index,
        chunk_count=chunk_count,
        records=checked,
        meta={key: document.get(key) for key in META_KEYS},
        duration_s=float(duration) if duration else None,
    )


def _quantile(series: pd.Series, q: float) -> float | None:
    series = series.dropna()
    return None if series.empty else float(series.quantile(q))


def summarise(records: list[dict[str, Any]], duration_s: float | None) -> dict[str, Any]:
    """p50/p99 TTFT, TPOT and E2E (seconds) of the successful requests, and throughput.

    TPOT is (E2E - TTFT) / (output tokens - 1), defined for two or more output tokens.
    """
    frame = pd.DataFrame.from_records(
        records, columns=["ttft_s", "e2e_s", "output_tokens", "error"]
    )
    ok = frame[frame["error"].isna()]
    ttft = pd.to_numeric(ok["ttft_s"], errors="coerce")
    e2e = pd.to_numeric(ok["e2e_s"], errors="coerce")
    tokens = pd.to_numeric(ok["output_tokens"], errors="coerce")
    tpot = ((e2e - ttft) / (tokens - 1)).where(tokens >= 2)
    summary: dict[str, Any] = {
        "requests": len(frame),
        "completed": len(ok),
        "errors": len(frame) - len(ok),
    }
    for name, series in (("ttft_s", ttft), ("tpot_s", tpot), ("e2e_s", e2e)):
        summary[f"{name}_p50"] = _quantile(series, 0.50)
        summary[f"{name}_p99"] = _quantile(series, 0.99)
    has_rate = bool(duration_s) and len(ok) > 0
    summary["request_throughput_rps"] = len(ok) / duration_s if has_rate else None
    summary["output_tokens_per_s"] = float(tokens.sum()) / duration_s if has_rate else None
    return summary
