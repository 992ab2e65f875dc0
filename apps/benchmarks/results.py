"""Result uploads: unzip within a size limit and check the envelope of docs/runner-protocol.md.

The records themselves are checked and analysed by the evidence app when the upload is ingested
(apps/evidence/ingest.py), in the same transaction. A bad upload raises UploadError naming the
field, and the caller stores nothing.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.core.parsers import JsonBodyError, loads_items_raw

GZIP_WBITS = 16 + zlib.MAX_WBITS
GUNZIP_STEP = 64 * 1024  # compressed bytes fed to the decompressor at a time
# Objects and arrays a body may hold besides its records' (load_point, engine, harness, ...).
ENVELOPE_CONTAINERS = 256
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
    # The records as undecoded JSON items (msgspec.Raw, see loads_items_raw) or, for a body
    # that path did not take, decoded ones; apps/evidence/schema.py reads both.
    records: list[Any]
    meta: dict[str, Any]
    duration_s: float | None
    document: dict[str, Any]  # the decoded body, so ingest need not gunzip and decode it again


def gunzip_limited(body: bytes, *, max_bytes: int) -> bytes:
    """Decompress one gzip stream piece by piece, stopping as soon as the output passes
    max_bytes (a gzip bomb never unzips beyond the limit); bytes after the stream are refused."""
    decompressor = zlib.decompressobj(GZIP_WBITS)
    pieces: list[bytes] = []
    size = 0
    pending = memoryview(body)
    try:
        while not decompressor.eof:
            if not pending and not decompressor.unconsumed_tail:
                raise UploadError("body: the gzip stream is truncated")
            source = decompressor.unconsumed_tail or pending[:GUNZIP_STEP]
            if not decompressor.unconsumed_tail:
                pending = pending[GUNZIP_STEP:]
            piece = decompressor.decompress(source, max_bytes + 1 - size)
            size += len(piece)
            if size > max_bytes:
                raise UploadTooLarge(f"body: more than {max_bytes} bytes once decompressed")
            pieces.append(piece)
    except zlib.error as error:
        raise UploadError(f"body: not valid gzip ({error})") from error
    if decompressor.unused_data or pending:
        raise UploadError("body: bytes after the end of the gzip stream")
    return b"".join(pieces)


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


def _check_envelope(document: Mapping[str, Any]) -> None:
    """The descriptive fields: a parseable start time and engine and harness objects."""
    started = document.get("started_at")
    if started is not None:
        try:
            datetime.fromisoformat(started if isinstance(started, str) else "")
        except ValueError as error:
            raise UploadError("started_at: must be an ISO 8601 date-time") from error
    for key in ("engine", "harness"):
        if document.get(key) is not None and not isinstance(document[key], dict):
            raise UploadError(f"{key}: must be an object")


def _check_plan_point(index: int, sent: Any, plan_points: list[dict[str, Any]]) -> None:
    """A fixed plan's upload measured the plan's load point: the same rate or concurrency."""
    planned = next((p for p in plan_points if p.get("index") == index), None)
    if planned is None or not isinstance(sent, Mapping):
        return  # a missing load point is the evidence schema's to name
    for key in ("rate_rps", "concurrency"):
        want, got = planned.get(key), sent.get(key)
        if want is None and got is None:
            continue
        if not _number(got) or want is None or not math.isclose(got, want, rel_tol=1e-9):
            raise UploadError(f"load_point.{key}: load point {index} of the plan has {key}={want}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_upload(
    raw: bytes,
    *,
    load_point_count: int,
    max_records: int,
    plan_points: list[dict[str, Any]] | None = None,
) -> ParsedUpload:
    """Check the decompressed JSON body of POST .../results (docs/runner-protocol.md).

    A load point sends each request of the plan's schedule once, so `max_records` (the
    schedule's length) bounds the records of a chunk, the chunks of a load point and the
    objects and arrays of a body (a record and its gaps, plus the envelope). `plan_points`
    (a fixed plan's load points) must match the upload's load point.
    """
    try:
        # The records are judged column by column in apps/evidence/schema.py, which decodes
        # them straight into typed rows when they arrive undecoded (msgspec.Raw items).
        document = loads_items_raw(
            raw, max_containers=2 * max_records + ENVELOPE_CONTAINERS, key="records"
        )
    except JsonBodyError as error:
        raise UploadError(str(error)) from error
    if not isinstance(document, dict):
        raise UploadError("body: must be a JSON object")
    index = _whole(document, "load_point_index", "")
    if index >= load_point_count:
        raise UploadError(f"load_point_index: the plan has {load_point_count} load point(s)")
    chunk_count = _whole(document, "chunk_count", "", minimum=1) if "chunk_count" in document else 1
    if chunk_count > max(1, max_records):
        raise UploadError(f"chunk_count: the plan sends {max_records} request(s) per load point")
    chunk_index = _whole(document, "chunk_index", "") if "chunk_index" in document else 0
    if chunk_index >= chunk_count:
        raise UploadError("chunk_index: must be below chunk_count")
    records = document.get("records")
    if not isinstance(records, list):
        raise UploadError("records: must be a list")
    if len(records) > max_records:
        raise UploadError(f"records: the plan sends {max_records} request(s) per load point")
    duration = document.get("duration_s")
    if duration is not None:
        _optional_number(document, "duration_s", "")
    _check_envelope(document)
    if plan_points is not None:
        _check_plan_point(index, document.get("load_point"), plan_points)
    return ParsedUpload(
        load_point_index=index,
        chunk_index=chunk_index,
        chunk_count=chunk_count,
        records=records,
        meta={key: document.get(key) for key in META_KEYS},
        duration_s=float(duration) if duration else None,
        document=document,
    )
