"""Writing request samples in bulk and reading them back as one DataFrame.

PostgreSQL gets the rows through COPY on psycopg 3's own cursor (row-by-row ORM inserts are
orders of magnitude slower at a million rows); the embedded SQLite set-up falls back to
bulk_create. Both run inside the caller's transaction, so a failure stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from django.db import IntegrityError, connection, transaction

from apps.evidence.analysis import tpot_seconds
from apps.evidence.models import LoadPointResult, Sample
from apps.evidence.schema import LoadPoint, LoadPointSamples

GAP_DTYPE = np.dtype("<f8")
SAMPLE_COLUMNS: tuple[str, ...] = (
    "result_id",
    "index",
    "send_s",
    "ttft_s",
    "e2e_s",
    "tpot_s",
    "input_tokens",
    "output_tokens",
    "itl_count",
    "itl_s",
    "error",
    "finish_reason",
    "status",
)
READ_COLUMNS: tuple[str, ...] = SAMPLE_COLUMNS[1:]
BULK_BATCH = 2000
DUPLICATE = "an index was already stored for this load point"


class DuplicateSampleError(ValueError):
    """A chunk repeats a request index already stored for its load point."""


def _floats(values: Any) -> list[float | None]:
    return [None if value != value else value for value in np.asarray(values, float).tolist()]


def _optional(series: pd.Series) -> list[Any]:
    return [None if value is pd.NA or value != value else value for value in series.tolist()]


def _packed_gaps(samples: LoadPointSamples) -> list[bytes | None]:
    counts = samples.records["itl_count"].to_numpy()
    ends = np.cumsum(np.clip(counts, 0, None))
    packed = samples.itl_gaps.astype(GAP_DTYPE).tobytes()
    width = GAP_DTYPE.itemsize
    return [
        None if count < 0 else packed[(end - count) * width : end * width]
        for count, end in zip(counts.tolist(), ends.tolist(), strict=True)
    ]


def sample_columns(result_id: int, samples: LoadPointSamples) -> list[list[Any]]:
    """Column lists in SAMPLE_COLUMNS order with plain Python values (None for missing)."""
    records = samples.records
    counts = records["itl_count"].to_numpy()
    return [
        [result_id] * len(records),
        records["index"].tolist(),
        _floats(records["send_s"]),
        _floats(records["ttft_s"]),
        _floats(records["e2e_s"]),
        _floats(tpot_seconds(records)),
        records["input_tokens"].tolist(),
        records["output_tokens"].tolist(),
        [None if count < 0 else count for count in counts.tolist()],
        _packed_gaps(samples),
        _optional(records["error"]),
        _optional(records["finish_reason"]),
        _optional(records["status"]),
    ]


def _rows(result_id: int, samples: LoadPointSamples) -> Iterator[tuple[Any, ...]]:
    return zip(*sample_columns(result_id, samples), strict=True)


def copy_statement() -> str:
    table = connection.ops.quote_name(Sample._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in SAMPLE_COLUMNS)
    return f"COPY {table} ({columns}) FROM STDIN"


def _copy(result_id: int, samples: LoadPointSamples) -> None:
    # The savepoint keeps a refused COPY from poisoning the caller's transaction unseen: the
    # psycopg cursor is used directly, so Django's error wrapping does not see its failures.
    try:
        with (
            transaction.atomic(),
            connection.cursor() as cursor,
            cursor.cursor.copy(copy_statement()) as copy,
        ):
            for row in _rows(result_id, samples):
                copy.write_row(row)
    except psycopg.errors.UniqueViolation as error:
        raise DuplicateSampleError(f"records: {DUPLICATE}") from error


def _bulk_create(result_id: int, samples: LoadPointSamples) -> None:
    names = SAMPLE_COLUMNS
    objects = (Sample(**dict(zip(names, row, strict=True))) for row in _rows(result_id, samples))
    try:
        with transaction.atomic():
            Sample.objects.bulk_create(objects, batch_size=BULK_BATCH)
    except IntegrityError as error:
        raise DuplicateSampleError(f"records: {DUPLICATE}") from error


def store_samples(*, result: LoadPointResult, samples: LoadPointSamples) -> None:
    """Write every record of `samples` under `result`; the caller's transaction holds them."""
    if connection.vendor == "postgresql":
        _copy(result.pk, samples)
    else:
        _bulk_create(result.pk, samples)


def read_samples(
    *, result: LoadPointResult, load_point: LoadPoint, duration_s: float
) -> LoadPointSamples:
    """Every stored sample of one load point as the typed frame the analysis takes (one query,
    its rows as the driver returns them: the ORM's per-value conversions cost more than the
    read itself at tens of thousands of rows)."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(column) for column in READ_COLUMNS)
    table = quote(Sample._meta.db_table)
    sql = f"SELECT {columns} FROM {table} WHERE {quote('result_id')} = %s ORDER BY {quote('index')}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [result.pk])
        rows = cursor.fetchall()
    frame = pd.DataFrame.from_records(rows, columns=list(READ_COLUMNS))
    gaps = np.frombuffer(
        b"".join(bytes(packed) for packed in frame["itl_s"] if packed is not None),
        dtype=GAP_DTYPE,
    )
    frame["itl_count"] = frame["itl_count"].fillna(-1).astype("int64")
    for column in ("send_s", "ttft_s", "e2e_s"):
        frame[column] = frame[column].astype(float)
    frame["error"] = frame["error"].astype("string")
    frame["finish_reason"] = frame["finish_reason"].astype("string")
    frame["status"] = frame["status"].astype("Int64")
    frame = frame.drop(columns=["tpot_s", "itl_s"])
    return LoadPointSamples(load_point, duration_s, frame, gaps.astype(float))
