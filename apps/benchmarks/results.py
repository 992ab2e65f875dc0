"""Result uploads: unzip within a size limit and check the envelope of docs/runner-protocol.md.

The records themselves are checked and analysed by the evidence app when the upload is ingested
(apps/evidence/ingest.py), in the same transaction. A bad upload raises UploadError naming the
field, and the caller stores nothing.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    document: dict[str, Any]  # the decoded body, so ingest need not gunzip and decode it again


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


def parse_upload(raw: bytes, *, load_point_count: int) -> ParsedUpload:
    """Check the decompressed JSON body of POST .../results (docs/runner-protocol.md)."""
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
    duration = document.get("duration_s")
    if duration is not None:
        _optional_number(document, "duration_s", "")
    return ParsedUpload(
        load_point_index=index,
        chunk_index=chunk_index,
        chunk_count=chunk_count,
        records=records,
        meta={key: document.get(key) for key in META_KEYS},
        duration_s=float(duration) if duration else None,
        document=document,
    )
