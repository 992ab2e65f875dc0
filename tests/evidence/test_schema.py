"""The upload schema: clean uploads become typed frames, bad ones are refused precisely."""

from __future__ import annotations

import json
import math

import msgspec
import pandas as pd
import pytest

from apps.evidence.schema import (
    MAX_ERRORS_PER_RULE,
    FieldError,
    LoadPoint,
    UploadError,
    _typed_records,
    parse_upload,
    samples_from_records,
    upload_errors,
)
from tests.evidence.samples import failed, record, upload


def frame_of(records, **options):
    return samples_from_records(records, LoadPoint(rate_rps=1.0), 1.0, **options).records


def test_a_clean_upload_becomes_a_typed_frame_with_missing_latencies_as_nan():
    parsed = parse_upload(upload([record(0), failed(1)]))

    frame = parsed.records
    assert parsed.load_point.rate_rps == 2.0
    assert parsed.duration_s == 2.0
    assert str(frame["index"].dtype) == "int64"
    assert str(frame["output_tokens"].dtype) == "int64"
    assert str(frame["ttft_s"].dtype) == "float64"
    assert str(frame["status"].dtype) == "Int64"
    assert str(frame["error"].dtype) == "string"
    assert math.isnan(frame.loc[1, "ttft_s"])
    assert frame["itl_count"].tolist() == [2, 0]
    assert parsed.itl_gaps.tolist() == [0.05, 0.05]


def test_the_harness_finish_reason_is_accepted_but_not_required():
    frame = frame_of([record(0, finish_reason="length"), record(1)])

    assert frame["finish_reason"].tolist()[0] == "length"
    assert frame["finish_reason"].isna().tolist() == [False, True]


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (record(1, ttft_s=float("nan")), "ttft_s", "must be finite (NaN and infinity are refused)"),
        (record(1, e2e_s=-0.2), "e2e_s", "must not be negative"),
        (record(1, itl_s=[0.05, -0.01]), "itl_s", "gaps must not be negative"),
        (record(1, itl_s=[0.05, float("nan")]), "itl_s", "gaps must be finite"),
        (record(1, ttft_s=0.5), "ttft_s", "exceeds e2e_s"),
        (
            record(1, output_tokens=7),
            "output_tokens",
            "disagrees with len(itl_s) + 1 streamed tokens",
        ),
        (record(1, input_tokens=12.5), "input_tokens", "must be an integer"),
        (record(1, input_tokens=True), "input_tokens", "must be an integer"),
        (record(1, send_s="0.5"), "send_s", "must be a number"),
        (record(1, itl_s=[0.05, None]), "itl_s", "gaps must be numbers"),
        (record(1, itl_s="0.05"), "itl_s", "must be a list of numbers or null"),
        (record(1, index=None), "index", "must not be null"),
        (record(1, index=0), "index", "duplicate index"),
        (record(1, e2e_s=None), "e2e_s", "required for a request without error"),
        (record(1, error=42), "error", "must be a string or null"),
        (record(1, latency=0.2), "latency", "unknown field"),
    ],
)
def test_a_bad_record_is_refused_naming_its_position_and_field(bad, field, message):
    errors = upload_errors(upload([record(0), bad]))

    assert errors == [FieldError(field, message, record=1)]


def test_a_record_without_a_required_field_is_refused_for_each_missing_field():
    incomplete = record(1)
    del incomplete["ttft_s"], incomplete["status"]

    errors = upload_errors(upload([record(0), incomplete]))

    assert errors == [
        FieldError("status", "missing field", record=1),
        FieldError("ttft_s", "missing field", record=1),
    ]


def test_the_refusal_message_names_the_record_and_field():
    with pytest.raises(UploadError, match=r"records\[1\]\.ttft_s: must be finite"):
        parse_upload(upload([record(0), record(1, ttft_s=float("inf"))]))


def test_many_bad_records_are_reported_up_to_a_cap_and_counted_beyond_it():
    bad = [record(i, e2e_s=-1.0) for i in range(MAX_ERRORS_PER_RULE + 5)]

    errors = upload_errors(upload(bad))

    assert [error.record for error in errors[:-1]] == list(range(MAX_ERRORS_PER_RULE))
    assert errors[-1] == FieldError("e2e_s", "must not be negative (and 5 more records)")


def test_multi_token_chunks_relax_the_token_check_but_refuse_more_chunks_than_tokens():
    bundled = record(0, output_tokens=5)
    impossible = record(1, output_tokens=2)

    with pytest.raises(UploadError) as refused:
        frame_of([bundled, impossible], multi_token_chunks=True)

    assert refused.value.errors == [
        FieldError("output_tokens", "is less than len(itl_s) + 1 streamed chunks", record=1)
    ]


def test_a_request_without_recorded_gaps_skips_the_token_check():
    frame = frame_of([record(0, itl_s=None, output_tokens=40)])

    assert frame["itl_count"].tolist() == [-1]


def test_failed_requests_need_no_timings_and_their_partial_stream_is_not_checked():
    frame = frame_of([failed(0), record(1, error="timeout", itl_s=[0.05] * 4)])

    assert frame["error"].tolist() == ["HTTP 500: boom", "timeout"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], [FieldError("body", "must be a JSON object")]),
        (
            {"load_point": {"rate_rps": 1, "concurrency": 2}, "duration_s": 1, "records": [{}]},
            [FieldError("load_point", "set exactly one of rate_rps and concurrency")],
        ),
        (
            upload([record(0)], load_point={"concurrency": 0}),
            [FieldError("load_point.concurrency", "must be an integer >= 1")],
        ),
        (
            upload([record(0)], duration_s=0),
            [FieldError("duration_s", "must be a positive number")],
        ),
        (upload([]), [FieldError("records", "must be a non-empty list")]),
        (
            {"duration_s": 1.0, "records": [record(0)], "extra": 1},
            [FieldError("extra", "unknown field"), FieldError("load_point", "missing field")],
        ),
    ],
)
def test_a_bad_upload_envelope_is_refused_naming_the_field(body, expected):
    assert upload_errors(body) == expected


def test_the_runner_protocol_envelope_fields_are_accepted():
    body = upload(
        [record(0)],
        load_point_index=0,
        started_at="2026-11-29T11:00:00Z",
        chunk_index=0,
        chunk_count=1,
        engine={"version": "0.1", "effective_config": {}},
        harness={"name": "stackselect-runner", "version": "0.1"},
    )

    assert upload_errors(body) == []


def undecoded(records):
    """The records as a runner's upload reaches the schema: JSON items not yet decoded."""
    return msgspec.json.Decoder(list[msgspec.Raw]).decode(json.dumps(records).encode())


UNDECODED_CASES = {
    "clean, with a failure, a finish reason and an unstreamed request": [
        record(0, finish_reason="stop"),
        failed(1, error="HTTP 503: ünavailable"),
        record(2, itl_s=None, ttft_s=None, output_tokens=1, status=None),
    ],
    "an integer where a number goes": [record(0, ttft_s=1, e2e_s=2, itl_s=[0.5, 0.5])],
    "a negative gap": [record(0), record(1, itl_s=[0.05, -0.01])],
    "a float index": [record(0), record(1, index=1.0)],
    "a boolean token count": [record(0, input_tokens=True)],
    "an index beyond the column": [record(2**31)],
    "a status out of range": [record(0, status=99)],
    "a NUL in the error": [failed(0, error="a\x00b")],
    "an error too long": [failed(0, error="x" * 4001)],
    "an unknown field": [record(0, colour="blue")],
    "a missing field": [{k: v for k, v in record(0).items() if k != "status"}],
    "not an object": [record(0), [1, 2]],
    "a repeated index": [record(0), record(0)],
    "gaps disagreeing with the tokens": [record(0, output_tokens=7)],
}


@pytest.mark.parametrize("case", UNDECODED_CASES)
def test_undecoded_records_are_judged_exactly_as_decoded_ones(case):
    records = UNDECODED_CASES[case]
    outcomes = []
    for sent in (json.loads(json.dumps(records)), undecoded(records)):
        try:
            outcomes.append(samples_from_records(sent, LoadPoint(rate_rps=1.0), 10.0))
        except UploadError as refused:
            outcomes.append([str(error) for error in refused.errors])
    decoded, typed = outcomes
    if isinstance(decoded, list):
        assert typed == decoded
        return
    assert not isinstance(typed, list), typed
    pd.testing.assert_frame_equal(
        typed.records.drop(columns="itl_s"), decoded.records.drop(columns="itl_s")
    )
    assert typed.records["itl_s"].tolist() == decoded.records["itl_s"].tolist()
    assert typed.itl_gaps.tolist() == decoded.itl_gaps.tolist()


def test_clean_undecoded_records_skip_the_column_checks_and_bad_ones_fall_back_to_them():
    clean = UNDECODED_CASES["clean, with a failure, a finish reason and an unstreamed request"]
    assert len(_typed_records(undecoded(clean))) == 3
    assert _typed_records(undecoded(UNDECODED_CASES["a float index"])) is None
    assert _typed_records(clean) is None  # decoded already: the column checks judge them
