"""The upload checks and the pandas summary, without a database."""

import gzip
import json

import pytest

from apps.benchmarks.results import (
    UploadError,
    UploadTooLarge,
    gunzip_limited,
    parse_upload,
    summarise,
)
from tests.benchmarks.factories import result_document


def test_the_summary_is_computed_from_successful_requests_only():
    records = [
        # e2e 1.1 s, ttft 0.1 s, 11 tokens -> tpot (1.1 - 0.1) / 10 = 0.1 s
        {"ttft_s": 0.1, "e2e_s": 1.1, "output_tokens": 11, "error": None},
        # e2e 0.5 s, ttft 0.3 s, 3 tokens -> tpot 0.2 / 2 = 0.1 s
        {"ttft_s": 0.3, "e2e_s": 0.5, "output_tokens": 3, "error": None},
        # one token: TTFT and E2E count, TPOT is undefined
        {"ttft_s": 0.2, "e2e_s": 0.2, "output_tokens": 1, "error": None},
        {"ttft_s": None, "e2e_s": None, "output_tokens": 0, "error": "timeout"},
    ]
    summary = summarise(records, duration_s=2.0)
    assert (summary["requests"], summary["completed"], summary["errors"]) == (4, 3, 1)
    assert summary["ttft_s_p50"] == pytest.approx(0.2)
    # Linear interpolation of 0.1, 0.2, 0.3 at 99 %: 0.2 + 0.98 * 0.1
    assert summary["ttft_s_p99"] == pytest.approx(0.298)
    assert summary["tpot_s_p50"] == pytest.approx(0.1)
    assert summary["e2e_s_p50"] == pytest.approx(0.5)
    assert summary["request_throughput_rps"] == pytest.approx(1.5)  # 3 ok / 2 s
    assert summary["output_tokens_per_s"] == pytest.approx(7.5)  # 15 tokens / 2 s


def test_a_load_point_where_everything_failed_reports_missing_not_zero():
    summary = summarise([{"ttft_s": None, "e2e_s": None, "output_tokens": 0, "error": "boom"}], 1.0)
    assert summary["ttft_s_p50"] is None and summary["request_throughput_rps"] is None


def test_a_gzip_bomb_is_refused_before_it_is_inflated():
    body = gzip.compress(b"0" * 100_000)
    with pytest.raises(UploadTooLarge):
        gunzip_limited(body, max_bytes=10_000)


def test_a_truncated_gzip_stream_is_refused():
    body = gzip.compress(b"x" * 1000)
    with pytest.raises(UploadError, match="truncated"):
        gunzip_limited(body[: len(body) // 2], max_bytes=10_000)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"load_point_index": 5}, "load_point_index"),
        ({"chunk_index": 1, "chunk_count": 1}, "chunk_index"),
        ({"records": "none"}, "records"),
        ({"records": [{"index": 0}]}, "records[0].send_s"),
        ({"records": [{"index": 0, "send_s": 0, "ttft_s": "fast"}]}, "records[0].ttft_s"),
        ({"records": [{"index": 0, "send_s": 0, "itl_s": [0.1, None]}]}, "records[0].itl_s"),
    ],
)
def test_a_malformed_upload_names_the_field(change, field):
    document = {**result_document(), **change}
    with pytest.raises(UploadError, match=f"^{field.replace('[', '.').replace(']', '.')}"):
        parse_upload(json.dumps(document).encode(), load_point_count=2)
