"""Writing request samples in bulk and reading them back as one DataFrame.

PostgreSQL gets the rows through COPY on psycopg 3's own cursor (row-by-row ORM inserts are
orders of magnitude slower at a million rows), in COPY's binary format built column by column
in numpy (no Python object per row or value); the embedded SQLite set-up falls back to
bulk_create. Both run inside the caller's transaction, so a failure stores nothing.
"""

from __future__ import annotations

import itertools
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
# COPY's binary format (PostgreSQL docs, "COPY", Binary Format): a signature, flags and header
# extension length (both 0), then per row a 16-bit field count and each field as a 32-bit
# length (-1: NULL) and its bytes, all big-endian; a field count of -1 ends the data.
BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
BINARY_TRAILER = b"\xff\xff"
COPY_BLOCK = 1 << 20  # bytes of rows built and sent at a time (its scatter index is 8 times that)


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


def copy_statement(*, binary: bool = False) -> str:
    table = connection.ops.quote_name(Sample._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in SAMPLE_COLUMNS)
    return f"COPY {table} ({columns}) FROM STDIN" + (" (FORMAT BINARY)" if binary else "")


def _place(out: np.ndarray, starts: np.ndarray, payload: np.ndarray, sizes: Any) -> None:
    """Copy the flat `payload` bytes, `sizes[i]` of them for row i (an array, or one width
    for every row), to out[starts[i]:]."""
    if np.ndim(sizes) == 0:
        out[(starts[:, None] + np.arange(sizes)).ravel()] = payload
        return
    firsts = np.cumsum(sizes) - sizes  # where each row's bytes start within payload
    out[np.repeat(starts - firsts, sizes) + np.arange(len(payload))] = payload


def _fixed(values: np.ndarray, dtype: str, null: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-width column: the present values' big-endian bytes and each row's length."""
    width = np.dtype(dtype).itemsize
    lengths = np.where(null, -1, width)
    return np.ascontiguousarray(values[~null], dtype=dtype).view(np.uint8), lengths


def _texts(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A text column (mostly NULL): the present values' UTF-8 bytes and each row's length."""
    values = series.to_numpy(dtype=object, na_value=None)
    lengths = np.full(len(values), -1, dtype=np.int64)
    present = np.flatnonzero(np.not_equal(values, None))
    encoded = [values[row].encode() for row in present]
    lengths[present] = list(map(len, encoded))
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths


def _columns_binary(result_id: int, samples: LoadPointSamples) -> list[tuple[Any, np.ndarray]]:
    """Per column of SAMPLE_COLUMNS, its present values' bytes (flat, row after row) and each
    row's length in bytes (-1: NULL), as COPY's binary format wants them."""
    records = samples.records
    rows = len(records)
    none = np.zeros(rows, dtype=bool)
    counts = records["itl_count"].to_numpy()
    status = records["status"]
    gaps = np.ascontiguousarray(samples.itl_gaps, dtype=GAP_DTYPE).view(np.uint8)
    timings = (records["send_s"], records["ttft_s"], records["e2e_s"], tpot_seconds(records))
    return [
        _fixed(np.full(rows, result_id), ">i8", none),
        _fixed(records["index"].to_numpy(), ">i4", none),
        *(_fixed(column.to_numpy(float), ">f8", column.isna().to_numpy()) for column in timings),
        _fixed(records["input_tokens"].to_numpy(), ">i4", none),
        _fixed(records["output_tokens"].to_numpy(), ">i4", none),
        _fixed(counts, ">i4", counts < 0),
        (gaps, np.where(counts < 0, -1, counts * GAP_DTYPE.itemsize)),
        _texts(records["error"]),
        _texts(records["finish_reason"]),
        _fixed(status.to_numpy(dtype=float, na_value=0), ">i2", status.isna().to_numpy()),
    ]


def binary_copy(result_id: int, samples: LoadPointSamples) -> Iterator[bytes]:
    """Every record of `samples` as a COPY FROM STDIN (FORMAT BINARY) stream in blocks of about
    COPY_BLOCK bytes, each built in whole-column numpy steps (the lengths of all its rows, then
    their bytes scattered to their places), so no Python object is made per row or value."""
    fields = _columns_binary(result_id, samples)
    sizes = [np.maximum(lengths, 0) for _, lengths in fields]
    firsts = [np.concatenate(([0], np.cumsum(size))) for size in sizes]
    row_sizes = 2 + 4 * len(fields) + np.sum(sizes, axis=0)
    ends = np.cumsum(row_sizes)
    total = int(ends[-1]) if len(ends) else 0
    cuts = np.unique(np.searchsorted(ends, np.arange(COPY_BLOCK, total, COPY_BLOCK)))
    yield BINARY_SIGNATURE
    for start, stop in itertools.pairwise([0, *cuts.tolist(), len(row_sizes)]):
        if start == stop:
            continue
        rows = stop - start
        out = np.empty(int(row_sizes[start:stop].sum()), dtype=np.uint8)
        places = np.cumsum(row_sizes[start:stop]) - row_sizes[start:stop]
        _place(out, places, np.full(rows, len(fields), dtype=">i2").view(np.uint8), 2)
        places = places + 2
        for (payload, lengths), size, first in zip(fields, sizes, firsts, strict=True):
            _place(out, places, lengths[start:stop].astype(">i4").view(np.uint8), 4)
            _place(out, places + 4, payload[first[start] : first[stop]], size[start:stop])
            places = places + 4 + size[start:stop]
        yield out.tobytes()
    yield BINARY_TRAILER


def _copy(result_id: int, samples: LoadPointSamples) -> None:
    # The psycopg cursor is used directly, so Django's error wrapping does not see a refused
    # COPY: marking the caller's atomic block for rollback keeps the aborted transaction from
    # being used unseen (a query after it in the block raises), without the two round trips
    # of a savepoint around every COPY. Callers let the error end their transaction.
    if not connection.in_atomic_block:
        raise RuntimeError("the samples' COPY must run inside the caller's transaction")
    try:
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(copy_statement(binary=True)) as copy,
        ):
            for block in binary_copy(result_id, samples):
                copy.write(block)
    except psycopg.errors.UniqueViolation as error:
        transaction.set_rollback(True)
        raise DuplicateSampleError(f"records: {DUPLICATE}") from error
    except psycopg.Error:
        transaction.set_rollback(True)
        raise


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
