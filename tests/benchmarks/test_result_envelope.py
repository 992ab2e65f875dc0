"""The upload envelope checks, without a database (records are the evidence app's to check)."""

import gzip
import json

import pytest

from apps.benchmarks.results import (
    UploadError,
    UploadTooLarge,
    gunzip_limited,
    parse_upload,
)
from tests.benchmarks.factories import result_document


def test_a_gzip_bomb_is_refused_before_it_is_inflated():
    body = gzip.compress(b"0" * 100_000)
    with pytest.raises(UploadTooLarge):
        gunzip_limited(body, max_bytes=10_000)


def test_a_truncated_gzip_stream_is_refused():
    body = gzip.compress(b"x" * 1000)
    with pytest.raises(UploadError, match="truncated"):
        gunzip_limited(body[: len(body) // 2], max_bytes=10_000)


def test_bytes_after_the_gzip_stream_are_refused():
    body = gzip.compress(b"{}")
    for trailer in (b"x", gzip.compress(b"[]")):  # junk, or a second gzip member
        with pytest.raises(UploadError, match="after the end of the gzip stream"):
            gunzip_limited(body + trailer, max_bytes=10_000)


def test_a_stream_of_many_pieces_unzips_whole_within_the_limit():
    raw = bytes(range(256)) * 4096  # 1 MiB, fed to the decompressor 64 KiB at a time
    body = gzip.compress(raw, compresslevel=0)
    assert gunzip_limited(body, max_bytes=len(raw)) == raw
    with pytest.raises(UploadTooLarge):
        gunzip_limited(body, max_bytes=len(raw) - 1)


def test_a_small_gzip_bomb_stops_unzipping_at_the_limit():
    body = gzip.compress(b"[]," * (32 * 1024 * 1024 // 3))  # ~32 KB that unzip to 32 MB
    with pytest.raises(UploadTooLarge, match="more than 1048576 bytes"):
        gunzip_limited(body, max_bytes=1024 * 1024)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"load_point_index": 5}, "load_point_index"),
        ({"chunk_index": 1, "chunk_count": 1}, "chunk_index"),
        ({"records": "none"}, "records"),
        ({"chunk_count": 21, "chunk_index": 0}, "chunk_count"),
        ({"started_at": "yesterday"}, "started_at"),
        ({"started_at": 17}, "started_at"),
        ({"engine": "vllm"}, "engine"),
        ({"harness": ["x"]}, "harness"),
        ({"load_point": {"index": 0, "rate_rps": 3.0}}, "load_point.rate_rps"),
        ({"load_point": {"index": 0, "concurrency": 1}}, "load_point.rate_rps"),
        ({"engine": {"version": "a\u0000"}}, "engine.version"),
    ],
)
def test_a_malformed_upload_names_the_field(change, field):
    document = {**result_document(), **change}
    with pytest.raises(UploadError, match=f"^{field.replace('[', '.').replace(']', '.')}"):
        parse_upload(
            json.dumps(document).encode(),
            load_point_count=2,
            max_records=20,
            plan_points=[{"index": 0, "rate_rps": 1.0}, {"index": 1, "rate_rps": 2.0}],
        )
