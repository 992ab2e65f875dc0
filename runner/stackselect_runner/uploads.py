"""Result uploads: one load point's records, split into chunks, each with its own idempotency key.

The key depends only on the attempt, the load point and the chunk, so a chunk re-sent after a
lost answer (or by a retried upload) names the same upload and the server stores it once; the
split depends only on the records, so a retried upload splits them the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from stackselect_runner.config import UPLOAD_CHUNK_BYTES
from stackselect_runner.harness import HARNESS_NAME, HARNESS_VERSION, LoadPointResult


def idempotency_key(attempt_id: int, load_point_index: int, chunk_index: int) -> str:
    return f"attempt-{attempt_id}.load-point-{load_point_index}.chunk-{chunk_index}"


def chunk_starts(records: list[dict[str, Any]], most: int, budget: int) -> list[int]:
    """Where each chunk starts: a new one when `most` records or `budget` bytes of JSON (the
    records and their separators) would be passed; one (empty) chunk for no records."""
    starts, count, size = [0], 0, 0
    for position, record in enumerate(records):
        length = len(json.dumps(record)) + 2
        if count and (count == most or size + length > budget):
            starts.append(position)
            count, size = 0, 0
        count, size = count + 1, size + length
    return starts


def result_uploads(
    attempt_id: int,
    result: LoadPointResult,
    engine: Mapping[str, Any],
    chunk_records: int,
    chunk_bytes: int = UPLOAD_CHUNK_BYTES,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(idempotency key, body) per chunk, in order: consecutive records, at most
    `chunk_records` of them and, but for a single larger record, `chunk_bytes` of their JSON."""
    load_point_index = result.point.index
    if load_point_index is None:
        raise ValueError("a load point needs an index to be uploaded")
    if chunk_records < 1 or chunk_bytes < 1:
        raise ValueError(
            f"chunk sizes must be >= 1, got {chunk_records} records, {chunk_bytes} bytes"
        )
    records = [record.as_dict() for record in result.records]
    starts = chunk_starts(records, chunk_records, chunk_bytes)
    chunk_count = len(starts)
    started_at = datetime.fromtimestamp(result.started_at_unix, UTC).isoformat()
    for chunk_index, (start, stop) in enumerate(pairwise([*starts, len(records)])):
        chunk = records[start:stop]
        body = {
            "load_point_index": load_point_index,
            "load_point": result.point.as_dict(),
            "started_at": started_at,
            "duration_s": result.duration_s,
            "chunk_index": chunk_index,
            "chunk_count": chunk_count,
            "engine": dict(engine),
            "harness": {"name": HARNESS_NAME, "version": HARNESS_VERSION},
            "records": chunk,
        }
        yield idempotency_key(attempt_id, load_point_index, chunk_index), body
