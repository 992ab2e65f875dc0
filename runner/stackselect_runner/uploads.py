"""Result uploads: one load point's records, split into chunks, each with its own idempotency key.

The key depends only on the attempt, the load point and the chunk, so a chunk re-sent after a
lost answer (or by a retried upload) names the same upload and the server stores it once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from stackselect_runner.harness import HARNESS_NAME, HARNESS_VERSION, LoadPointResult


def idempotency_key(attempt_id: int, load_point_index: int, chunk_index: int) -> str:
    return f"attempt-{attempt_id}.load-point-{load_point_index}.chunk-{chunk_index}"


def result_uploads(
    attempt_id: int,
    result: LoadPointResult,
    engine: Mapping[str, Any],
    chunk_records: int,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(idempotency key, body) per chunk of at most `chunk_records` records, in order."""
    load_point_index = result.point.index
    if load_point_index is None:
        raise ValueError("a load point needs an index to be uploaded")
    if chunk_records < 1:
        raise ValueError(f"chunk_records must be >= 1, got {chunk_records}")
    records = [record.as_dict() for record in result.records]
    chunk_count = max(1, math.ceil(len(records) / chunk_records))
    started_at = datetime.fromtimestamp(result.started_at_unix, UTC).isoformat()
    for chunk_index in range(chunk_count):
        chunk = records[chunk_index * chunk_records : (chunk_index + 1) * chunk_records]
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
