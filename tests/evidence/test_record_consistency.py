"""Records that no real request can produce are refused before they reach the database or
the evidence, each named by its position and field (issue 16's inconsistent uploads)."""

from __future__ import annotations

import pytest

from apps.evidence.schema import MAX_COLUMN_INTEGER, upload_errors
from tests.evidence.samples import failed, record, upload


def _named(body) -> set[tuple[int | None, str]]:
    return {(error.record, error.field) for error in upload_errors(body)}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        # ITL gaps summing to 15 s for a 0.16 s request
        ({"itl_s": [7.5, 7.5], "e2e_s": 0.16, "ttft_s": 0.1}, "itl_s"),
        # E2E far beyond TTFT plus the gaps
        ({"e2e_s": 5.0}, "e2e_s"),
        # sent after the load point's window (duration 2 s)
        ({"send_s": 30.0}, "send_s"),
        # sent inside, but ending long after
        ({"send_s": 1.5, "ttft_s": 5.0, "itl_s": [0.05, 0.05], "e2e_s": 5.1}, "e2e_s"),
        # HTTP 500 with no error
        ({"status": 500}, "error"),
        # a refused request with tokens and timings
        ({"status": 503, "error": "HTTP 503: busy"}, "output_tokens"),
        # an absurd duration
        ({"ttft_s": 1e9, "e2e_s": 1e9 + 0.1}, "ttft_s"),
        # beyond the integer columns
        ({"input_tokens": MAX_COLUMN_INTEGER + 1}, "input_tokens"),
        ({"index": 2**40}, "index"),
        ({"status": 70000}, "status"),
        # strings a text column cannot hold, or longer than the column
        ({"error": "boom\x00"}, "error"),
        ({"finish_reason": "x" * 41}, "finish_reason"),
    ],
)
def test_an_inconsistent_record_is_refused_naming_it_and_its_field(bad, field):
    body = upload([record(0), record(1, **bad)])
    assert (1, field) in _named(body)
    assert not any(position == 0 for position, _ in _named(body))


def test_consistent_records_within_the_tolerances_pass():
    tail = record(0, e2e_s=0.2 + 0.5)  # half a second after the last token: a slow [DONE]
    rounded = record(1, itl_s=[0.0505, 0.0505])  # a tool's rounding
    assert upload_errors(upload([tail, rounded, failed(2)])) == []


def test_an_absurd_load_point_duration_is_refused():
    assert _named(upload([record(0)], duration_s=10**7)) == {(None, "duration_s")}
