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


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"load_point_index": 5}, "load_point_index"),
        ({"chunk_index": 1, "chunk_count": 1}, "chunk_index"),
        ({"records": "none"}, "records"),
    ],
)
def test_a_malformed_upload_names_the_field(change, field):
    document = {**result_document(), **change}
    with pytest.raises(UploadError, match=f"^{field.replace('[', '.').replace(']', '.')}"):
        parse_upload(json.dumps(document).encode(), load_point_count=2)
