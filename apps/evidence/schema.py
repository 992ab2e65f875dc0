"""The per-request record schema a runner uploads, its validation, and its typed DataFrame.

An upload (docs/runner-protocol.md, "results") carries one load point and its records:
`{index, send_s, ttft_s, itl_s, e2e_s, input_tokens, output_tokens, error, status}`.
Checks run on whole columns so a million-record upload is judged in numpy, not per record;
every error names the record's position in `records` and the field, so a runner author can
find the fault. In the DataFrame a latency that was not measured is NaN, never 0.

A runner's upload arrives with its records still undecoded (apps.core.parsers.loads_items_raw):
they are decoded straight into typed rows (`_Record`, whose types and bounds msgspec checks in
C), which holds exactly for the records the column checks below accept. Records that do not fit
are decoded as plain JSON and judged by those column checks, which name every fault.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype
from stackselect_domain.checks import NUL_REFUSED

RECORD_FIELDS: tuple[str, ...] = (
    "index",
    "send_s",
    "ttft_s",
    "itl_s",
    "e2e_s",
    "input_tokens",
    "output_tokens",
    "error",
    "status",
)
# The runner's harness also reports why generation stopped; accepted, never required.
OPTIONAL_RECORD_FIELDS: tuple[str, ...] = ("finish_reason",)
UPLOAD_FIELDS: tuple[str, ...] = ("load_point", "duration_s", "records")
# Envelope fields of the runner protocol that the web app's ingest reads; not judged here.
ENVELOPE_FIELDS: tuple[str, ...] = (
    "load_point_index",
    "started_at",
    "chunk_index",
    "chunk_count",
    "engine",
    "harness",
)
LOAD_POINT_FIELDS: tuple[str, ...] = ("index", "rate_rps", "concurrency")
TIMEOUT_ERROR = "timeout"
MAX_ERRORS_PER_RULE = 20
# The columns of apps.evidence.models.Sample: positive integers, a small HTTP status, a short
# finish reason; longer error messages are refused rather than cut, so nothing is lost silently.
MAX_COLUMN_INTEGER = 2**31 - 1
HTTP_STATUS_RANGE = (100, 599)
MAX_STRING_CHARS = {"error": 4000, "finish_reason": 40}
# Cross-field tolerances (seconds, and shares of the request's e2e or the load point's
# duration): clocks differ by microseconds, the stream's tail after the last token (usage
# chunk, [DONE]) takes a little time, a tool's rounding a little more; beyond that a record
# is inconsistent. No timing may exceed a day.
ITL_SUM_TOLERANCE = (0.01, 0.05)
STREAM_TAIL_TOLERANCE = (1.0, 0.10)
WINDOW_TOLERANCE = (1.0, 0.05)
MAX_DURATION_S = 86_400.0

_Seconds = Annotated[float, msgspec.Meta(ge=0)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COLUMN_INTEGER)]


class _Record(msgspec.Struct, forbid_unknown_fields=True):
    """One record as the column checks accept it, field for field (RECORD_FIELDS, then the
    optional ones): a record msgspec decodes into this passes every per-field check there."""

    index: _Count
    send_s: _Seconds | None
    ttft_s: _Seconds | None
    itl_s: list[_Seconds] | None
    e2e_s: _Seconds | None
    input_tokens: _Count
    output_tokens: _Count
    error: Annotated[str, msgspec.Meta(max_length=MAX_STRING_CHARS["error"])] | None
    status: Annotated[int, msgspec.Meta(ge=HTTP_STATUS_RANGE[0], le=HTTP_STATUS_RANGE[1])] | None
    finish_reason: (
        Annotated[str, msgspec.Meta(max_length=MAX_STRING_CHARS["finish_reason"])] | None
    ) = None


_RECORDS = msgspec.json.Decoder(list[_Record])
_RECORD_VALUES = operator.attrgetter(*RECORD_FIELDS, *OPTIONAL_RECORD_FIELDS)
_FLOAT_KINDS = frozenset({"integer", "floating", "mixed-integer-float", "empty"})
_INTEGER_KINDS = frozenset({"integer", "empty"})
_STRING_KINDS = frozenset({"string", "empty"})
_NUMBER_TYPES = frozenset({int, float})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One fault: `record` is the position in `records` (None for the upload itself)."""

    field: str
    message: str
    record: int | None = None

    def __str__(self) -> str:
        where = self.field if self.record is None else f"records[{self.record}].{self.field}"
        return f"{where}: {self.message}"


class UploadError(ValueError):
    """A refused upload; `errors` lists every fault found (capped per rule)."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        shown = "; ".join(str(error) for error in self.errors[:5])
        more = f" (+{len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        super().__init__(f"invalid upload: {shown}{more}")


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """An open-loop rate or a closed-loop concurrency: exactly one is set."""

    rate_rps: float | None = None
    concurrency: int | None = None
    index: int | None = None

    def as_dict(self) -> dict[str, Any]:
        point: dict[str, Any] = {} if self.index is None else {"index": self.index}
        if self.rate_rps is not None:
            point["rate_rps"] = self.rate_rps
        if self.concurrency is not None:
            point["concurrency"] = self.concurrency
        return point


@dataclass(frozen=True)
class LoadPointSamples:
    """A validated load point: its records as a typed DataFrame (one row per request).

    `itl_gaps` holds every recorded gap once more as one flat array, record after record in
    the frame's order (`records.itl_count` gaps each, -1 meaning none recorded), so the
    analysis never walks the per-record lists again.
    """

    load_point: LoadPoint
    duration_s: float
    records: pd.DataFrame
    itl_gaps: np.ndarray


class _Collector:
    """Gathers errors, at most MAX_ERRORS_PER_RULE records per rule plus a count of the rest."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, field: str, message: str) -> None:
        self.errors.append(FieldError(field, message))

    def add_records(self, field: str, message: str, positions: np.ndarray) -> None:
        positions = np.asarray(positions)
        for position in positions[:MAX_ERRORS_PER_RULE]:
            self.errors.append(FieldError(field, message, int(position)))
        if len(positions) > MAX_ERRORS_PER_RULE:
            rest = len(positions) - MAX_ERRORS_PER_RULE
            self.errors.append(FieldError(field, f"{message} (and {rest} more records)"))

    def where(self, field: str, message: str, mask: np.ndarray) -> None:
        if mask.any():
            self.add_records(field, message, np.flatnonzero(mask))


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER_TYPES


def _positive_number(value: Any) -> bool:
    return _is_number(value) and np.isfinite(value) and value > 0


def _load_point(raw: Any, errors: _Collector) -> LoadPoint | None:
    if not isinstance(raw, Mapping):
        errors.add("load_point", "must be an object with rate_rps or concurrency")
        return None
    for key in sorted(set(raw) - set(LOAD_POINT_FIELDS)):
        errors.add(f"load_point.{key}", "unknown field")
    rate, concurrency, index = raw.get("rate_rps"), raw.get("concurrency"), raw.get("index")
    if (rate is None) == (concurrency is None):
        errors.add("load_point", "set exactly one of rate_rps and concurrency")
        return None
    if rate is not None and not _positive_number(rate):
        errors.add("load_point.rate_rps", "must be a positive number")
    if concurrency is not None and not (type(concurrency) is int and concurrency >= 1):
        errors.add("load_point.concurrency", "must be an integer >= 1")
    if index is not None and not (type(index) is int and index >= 0):
        errors.add("load_point.index", "must be an integer >= 0")
    return LoadPoint(
        rate_rps=None if rate is None else float(rate), concurrency=concurrency, index=index
    )


def _key_errors(records: list[Any], errors: _Collector) -> None:
    """Unknown and missing fields, judged once per distinct key list rather than per record."""
    not_objects = np.array([not isinstance(record, dict) for record in records], dtype=bool)
    errors.where("record", "must be an object", not_objects)
    if not_objects.any():
        return
    required, allowed = set(RECORD_FIELDS), set(RECORD_FIELDS + OPTIONAL_RECORD_FIELDS)
    for key_list in Counter(map(tuple, records)):
        keys = set(key_list)
        if allowed >= keys >= required:
            continue
        positions = np.flatnonzero([tuple(record) == key_list for record in records])
        for field in sorted(keys - allowed):
            errors.add_records(field, "unknown field", positions)
        for field in sorted(required - keys):
            errors.add_records(field, "missing field", positions)


def _typed_mask(values: np.ndarray, types: frozenset[type]) -> np.ndarray:
    """True where a non-null value has none of `types` (bool is not an int here)."""
    present = ~np.equal(values, None)
    wrong = np.zeros(len(values), dtype=bool)
    wrong[present] = [type(value) not in types for value in values[present]]
    return wrong


def _kind_is(values: np.ndarray, kinds: frozenset[str]) -> bool:
    return infer_dtype(values, skipna=True) in kinds


def _numbers(
    values: np.ndarray,
    field: str,
    errors: _Collector,
    *,
    integer: bool,
    nullable: bool,
    bounds: tuple[float, float] = (0, np.inf),
) -> np.ndarray:
    """Float column (NaN where null) after type, null, finiteness and range checks."""
    null = np.equal(values, None)
    kinds, types = (_INTEGER_KINDS, {int}) if integer else (_FLOAT_KINDS, _NUMBER_TYPES)
    if not _kind_is(values, kinds):
        wrong = _typed_mask(values, frozenset(types))
        errors.where(field, "must be an integer" if integer else "must be a number", wrong)
        values = np.where(wrong, None, values)
    if not nullable:
        errors.where(field, "must not be null", null)
    null = np.equal(values, None)
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    errors.where(
        field, "must be finite (NaN and infinity are refused)", ~np.isfinite(numbers) & ~null
    )
    low, high = bounds
    errors.where(field, "must not be negative" if low == 0 else f"must be >= {low}", numbers < low)
    errors.where(field, f"must be at most {high}", numbers > high)
    return numbers


def _strings(values: np.ndarray, field: str, errors: _Collector) -> pd.Series:
    wrong = np.zeros(len(values), dtype=bool)
    if not _kind_is(values, _STRING_KINDS):
        wrong = _typed_mask(values, frozenset({str}))
        errors.where(field, "must be a string or null", wrong)
    strings = pd.Series(np.where(wrong, None, values), dtype=object).astype("string")
    nul = strings.str.contains("\x00", regex=False).fillna(False).to_numpy(bool)
    errors.where(field, NUL_REFUSED, nul)
    longest = MAX_STRING_CHARS[field]
    too_long = (strings.str.len() > longest).fillna(False).to_numpy(bool)
    errors.where(field, f"must be at most {longest} characters", too_long)
    return strings


def _gaps(values: np.ndarray, errors: _Collector) -> tuple[np.ndarray, np.ndarray]:
    """Per-record gap counts (-1 where not recorded) and one flat array of every gap."""
    recorded = ~np.equal(values, None)
    not_lists = _typed_mask(values, frozenset({list}))
    errors.where("itl_s", "must be a list of numbers or null", not_lists)
    recorded &= ~not_lists
    counts = np.full(len(values), -1, dtype=np.int64)
    counts[recorded] = [len(gaps) for gaps in values[recorded]]
    total = int(counts[recorded].sum())
    flat = np.fromiter(itertools.chain.from_iterable(values[recorded]), dtype=object, count=total)
    owners = np.repeat(np.flatnonzero(recorded), counts[recorded])
    if not _kind_is(flat, _FLOAT_KINDS) or np.equal(flat, None).any():
        bad = _typed_mask(flat, _NUMBER_TYPES) | np.equal(flat, None)
        errors.add_records("itl_s", "gaps must be numbers", np.unique(owners[bad]))
        flat = np.where(bad, 0.0, flat)
    gaps = flat.astype(float)
    errors.add_records("itl_s", "gaps must be finite", np.unique(owners[~np.isfinite(gaps)]))
    errors.add_records("itl_s", "gaps must not be negative", np.unique(owners[gaps < 0]))
    return counts, gaps


def _repeated(values: np.ndarray) -> np.ndarray:
    """True at every value seen earlier in the array (pandas' duplicated(keep="first"))."""
    repeated = np.ones(len(values), dtype=bool)
    repeated[np.unique(values, return_index=True)[1]] = False
    return repeated


def _cross_checks(
    columns: Mapping[str, Any],
    gap_sums: np.ndarray,
    errors: _Collector,
    *,
    duration_s: float,
    multi_token_chunks: bool,
    strict_failures: bool,
) -> None:
    """Rules between fields: the timings and token counts must tell one consistent story.
    `columns` holds the frame's columns, the numbers as float arrays (NaN where null)."""
    ok = columns["error"].isna().to_numpy()
    ttft, e2e = columns["ttft_s"], columns["e2e_s"]
    output, counts = columns["output_tokens"], columns["itl_count"]
    errors.where("e2e_s", "required for a request without error", ok & np.isnan(e2e))
    streamed = ok & (counts >= 0)
    missing_first = streamed & (output > 0) & np.isnan(ttft)
    errors.where("ttft_s", "required for a streamed request with output_tokens > 0", missing_first)
    errors.where("ttft_s", "exceeds e2e_s", ttft > e2e)
    streamed &= ~np.isnan(ttft)
    if multi_token_chunks:
        disagree = streamed & (output < counts + 1)
        rule = "is less than len(itl_s) + 1 streamed chunks"
    else:
        disagree = streamed & (output != counts + 1)
        rule = "disagrees with len(itl_s) + 1 streamed tokens"
    errors.where("output_tokens", rule, disagree)
    errors.where("index", "duplicate index", _repeated(columns["index"]))
    _timing_checks(columns, gap_sums, errors, streamed=streamed & ~np.isnan(e2e) & ~(ttft > e2e))
    _window_checks(columns, errors, duration_s=duration_s)
    _status_checks(columns, errors, strict=strict_failures)


def _timing_checks(
    columns: Mapping[str, Any], gap_sums: np.ndarray, errors: _Collector, *, streamed: np.ndarray
) -> None:
    """The gaps between tokens fill the time from the first token to the end, within tolerance."""
    ttft, e2e = columns["ttft_s"], columns["e2e_s"]
    after_first = e2e - ttft
    absolute, share = ITL_SUM_TOLERANCE
    over = streamed & (gap_sums > after_first + absolute + share * e2e)
    errors.where(
        "itl_s",
        f"gaps sum beyond e2e_s - ttft_s (tolerance {absolute} s + {share:.0%} of e2e_s)",
        over,
    )
    absolute, share = STREAM_TAIL_TOLERANCE
    short = streamed & (after_first - gap_sums > absolute + share * e2e)
    errors.where(
        "e2e_s",
        f"exceeds ttft_s plus the gaps of itl_s (tolerance {absolute} s + {share:.0%} of e2e_s)",
        short,
    )
    for field in ("send_s", "ttft_s", "e2e_s"):
        errors.where(field, f"is over {MAX_DURATION_S:.0f} s", columns[field] > MAX_DURATION_S)


def _window_checks(columns: Mapping[str, Any], errors: _Collector, *, duration_s: float) -> None:
    """Every request is sent and finished within the load point's duration."""
    absolute, share = WINDOW_TOLERANCE
    end = duration_s + max(absolute, share * duration_s)
    send, e2e = columns["send_s"], columns["e2e_s"]
    where = f"the load point's duration_s of {duration_s:g} s"
    errors.where("send_s", f"is after the end of {where}", send > end)
    errors.where("e2e_s", f"ends after the end of {where}", send + e2e > end)


def _status_checks(columns: Mapping[str, Any], errors: _Collector, *, strict: bool) -> None:
    """An HTTP error status is a failed request: it has an error, and (`strict`: the runner,
    which stops reading at a non-2xx answer) no tokens or timings. Tools such as AIPerf time
    their failed requests too, so their imports are not strict."""
    status = columns["status"]
    refused = ~np.isnan(status) & ((status < 200) | (status > 299))
    errors.where(
        "error", "required when status is not 2xx", refused & columns["error"].isna().to_numpy()
    )
    if not strict:
        return
    errors.where(
        "output_tokens",
        "must be 0 when status is not 2xx",
        refused & (columns["output_tokens"] > 0),
    )
    for field in ("ttft_s", "e2e_s"):
        present = ~np.isnan(columns[field])
        errors.where(field, "must be null when status is not 2xx", refused & present)
    errors.where(
        "itl_s",
        "must be empty when status is not 2xx",
        refused & (columns["itl_count"] > 0),
    )


def _columns(records: list[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Every field of the records as an object column, read in one pass. The keys were
    checked already, so records of as many keys as the required (or all) fields have them."""
    every = RECORD_FIELDS + OPTIONAL_RECORD_FIELDS
    sizes = set(map(len, records))
    if sizes <= {len(RECORD_FIELDS)} or sizes == {len(every)}:
        present = RECORD_FIELDS if sizes <= {len(RECORD_FIELDS)} else every
        rows = list(map(operator.itemgetter(*present), records))
    else:
        present = every
        rows = [tuple(record.get(field) for field in every) for record in records]
    values = dict(zip(present, zip(*rows, strict=True), strict=True)) if rows else {}
    columns = {}
    for field in every:
        column = values.get(field)
        if column is None:
            columns[field] = np.full(len(records), None, dtype=object)
        else:  # fromiter keeps each gap list one object, where assignment would nest them
            columns[field] = np.fromiter(column, dtype=object, count=len(records))
    return columns


def _gap_sums(counts: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Each record's sum of gaps (0 where none), from the one flat array of gaps."""
    owners = np.repeat(np.arange(len(counts)), np.maximum(counts, 0))
    return np.bincount(owners, weights=gaps, minlength=len(counts))


def _checked_columns(
    records: list[Mapping[str, Any]], errors: _Collector
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The frame's columns of decoded records, each checked field by field; with the gap
    counts and the flat gaps."""
    columns = _columns(records)
    counts, gaps = _gaps(columns["itl_s"], errors)
    data: dict[str, Any] = {}
    counted = (0, MAX_COLUMN_INTEGER)
    for field, integer, nullable, bounds in (
        ("index", True, False, counted),
        ("send_s", False, True, (0, np.inf)),
        ("ttft_s", False, True, (0, np.inf)),
        ("e2e_s", False, True, (0, np.inf)),
        ("input_tokens", True, False, counted),
        ("output_tokens", True, False, counted),
        ("status", True, True, HTTP_STATUS_RANGE),
    ):
        data[field] = _numbers(
            columns[field],
            field,
            errors,
            integer=integer,
            nullable=nullable,
            bounds=bounds,
        )
    data["itl_s"] = columns["itl_s"]
    data["itl_count"] = counts
    data["error"] = _strings(columns["error"], "error", errors)
    data["finish_reason"] = _strings(columns["finish_reason"], "finish_reason", errors)
    return data, counts, gaps


def _typed_records(records: Sequence[Any]) -> list[_Record] | None:
    """Undecoded records (msgspec.Raw items) as typed rows; None when they are not undecoded
    or one of them does not fit `_Record` (then the column checks name the faults)."""
    if not records or not isinstance(records[0], msgspec.Raw):
        return None
    try:
        return _RECORDS.decode(b"[" + b",".join(records) + b"]")
    except msgspec.ValidationError:  # the items are valid JSON, so only a type can fail
        return None


def _decoded(records: Sequence[Any]) -> list[Any]:
    """The records as plain JSON values (the standard decoder, as for any other body).
    Undecoded records were not depth-checked (apps.core.parsers.loads_items_raw): any nesting
    is refused by the checks below, and nesting beyond the decoder's recursion limit here."""
    if records and isinstance(records[0], msgspec.Raw):
        try:
            return json.loads(b"[" + b",".join(records) + b"]")
        except RecursionError as error:
            raise UploadError([FieldError("records", "nested too deep")]) from error
    return list(records)


def _typed_columns(
    rows: list[_Record], errors: _Collector
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The columns `_checked_columns` gives for the same records, read from typed rows: their
    types and bounds hold already, so only the strings' NUL check is left to do."""
    values = dict(
        zip(
            RECORD_FIELDS + OPTIONAL_RECORD_FIELDS,
            zip(*map(_RECORD_VALUES, rows), strict=True),
            strict=True,
        )
    )
    size = len(rows)
    data: dict[str, Any] = {
        field: np.array(values[field], dtype=float)  # None becomes NaN
        for field in ("index", "send_s", "ttft_s", "e2e_s", "input_tokens", "output_tokens")
    }
    data["status"] = np.array(values["status"], dtype=float)
    itl = np.fromiter(values["itl_s"], dtype=object, count=size)
    recorded = np.not_equal(itl, None)
    counts = np.full(size, -1, dtype=np.int64)
    counts[recorded] = list(map(len, itl[recorded]))
    total = int(counts[recorded].sum())
    gaps = np.fromiter(itertools.chain.from_iterable(itl[recorded]), dtype=float, count=total)
    data["itl_s"] = itl
    data["itl_count"] = counts
    for field in ("error", "finish_reason"):
        column = np.fromiter(values[field], dtype=object, count=size)
        if any("\x00" in text for text in column[np.not_equal(column, None)]):
            data[field] = _strings(column, field, errors)  # names the records
        else:
            data[field] = pd.Series(pd.array(column, dtype="string"))
    return data, counts, gaps


def _build_frame(
    records: list[Mapping[str, Any]] | None,
    rows: list[_Record] | None,
    errors: _Collector,
    *,
    duration_s: float,
    multi_token_chunks: bool,
    strict_failures: bool,
) -> tuple[pd.DataFrame, np.ndarray]:
    if rows is not None:
        data, counts, gaps = _typed_columns(rows, errors)
    else:
        assert records is not None
        data, counts, gaps = _checked_columns(records, errors)
    if errors.errors:
        return pd.DataFrame(data), gaps
    _cross_checks(
        data,
        _gap_sums(counts, gaps),
        errors,
        duration_s=duration_s,
        multi_token_chunks=multi_token_chunks,
        strict_failures=strict_failures,
    )
    for field in ("index", "input_tokens", "output_tokens"):
        data[field] = data[field].astype(np.int64)
    data["status"] = pd.array(data["status"], dtype="Int64")
    return pd.DataFrame(data), gaps


def samples_from_records(
    records: Sequence[Mapping[str, Any]],
    load_point: LoadPoint,
    duration_s: float,
    *,
    multi_token_chunks: bool = False,
    strict_failures: bool = False,
) -> LoadPointSamples:
    """Validate records and return them typed, or raise UploadError listing every fault.
    `records` are decoded JSON objects, or undecoded ones (msgspec.Raw items) read straight
    into typed rows when they fit.

    `multi_token_chunks` relaxes the token check for tools whose engines stream several
    tokens per chunk (then only more chunks than tokens is impossible); `strict_failures`
    refuses tokens and timings on a request answered with a non-2xx status.
    """
    errors = _Collector()
    rows = _typed_records(records)
    decoded = None
    if rows is None:
        decoded = _decoded(records)
        _key_errors(decoded, errors)
        if errors.errors:
            raise UploadError(errors.errors)
    if not (_positive_number(duration_s) and duration_s <= MAX_DURATION_S):
        raise UploadError(
            [FieldError("duration_s", f"must be a number in (0, {MAX_DURATION_S:.0f}]")]
        )
    frame, gaps = _build_frame(
        decoded,
        rows,
        errors,
        duration_s=duration_s,
        multi_token_chunks=multi_token_chunks,
        strict_failures=strict_failures,
    )
    if errors.errors:
        raise UploadError(errors.errors)
    return LoadPointSamples(load_point, duration_s, frame, gaps)


def upload_errors(body: Any, *, multi_token_chunks: bool = False) -> list[FieldError]:
    """Every fault of an upload body; an empty list means `parse_upload` will accept it."""
    try:
        parse_upload(body, multi_token_chunks=multi_token_chunks)
    except UploadError as refused:
        return refused.errors
    return []


def parse_upload(body: Any, *, multi_token_chunks: bool = False) -> LoadPointSamples:
    """A runner's results body as LoadPointSamples; UploadError names every fault."""
    errors = _Collector()
    if not isinstance(body, Mapping):
        raise UploadError([FieldError("body", "must be a JSON object")])
    for key in sorted(set(body) - set(UPLOAD_FIELDS + ENVELOPE_FIELDS)):
        errors.add(key, "unknown field")
    for key in UPLOAD_FIELDS:
        if key not in body:
            errors.add(key, "missing field")
    point = _load_point(body.get("load_point"), errors) if "load_point" in body else None
    duration = body.get("duration_s")
    if "duration_s" in body and not _positive_number(duration):
        errors.add("duration_s", "must be a positive number")
    records = body.get("records")
    if "records" in body and not (isinstance(records, list) and records):
        errors.add("records", "must be a non-empty list")
    if errors.errors:
        raise UploadError(errors.errors)
    assert point is not None  # guaranteed by the checks above
    return samples_from_records(
        records,
        point,
        float(duration),
        multi_token_chunks=multi_token_chunks,
        strict_failures=True,  # the runner's own records (docs/runner-protocol.md)
    )
