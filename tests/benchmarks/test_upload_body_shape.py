"""A results body is decoded without the exact bracket scan over its records (issue 17: it was
an eighth of a large upload), yet nesting and container bombs are still refused with a 400
naming the fault, and nothing of them is stored; so is a NUL, which the records' typed decoder
lets through to the schema's own check; one upload's queries stay few."""

from __future__ import annotations

import gzip
import json

import msgspec
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.benchmarks.models import ResultUpload
from apps.core.parsers import NUL_REFUSED, JsonBodyError, loads_items_raw
from apps.evidence.models import EvidenceRun, Sample
from apps.evidence.schema import UploadError, parse_upload
from tests.benchmarks.factories import result_document

RECORD = (
    b'{"index": 0, "send_s": 0.0, "ttft_s": 0.1, "itl_s": [0.02, 0.02, 0.02], "e2e_s": 0.16, '
    b'"input_tokens": 512, "output_tokens": 4, "status": 200, "error": '
)


@pytest.fixture
def claimed(attempt, sim_runner):
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    return attempt, api


def post_raw(claimed, raw: bytes):
    attempt, api = claimed
    return api.client.post(
        f"/api/runner/v1/attempts/{attempt.pk}/results",
        data=gzip.compress(raw),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="shape",
        HTTP_CONTENT_ENCODING="gzip",
        **api.auth,
    )


def body(records: bytes, **envelope: object) -> bytes:
    """The fixtures' upload of load point 0 with `records` (JSON text) as its records."""
    document = {**result_document(0), **envelope, "records": "@records@"}
    return json.dumps(document).encode().replace(b'"@records@"', b"[" + records + b"]")


def refused(response, starts: str) -> None:
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "bad_upload"
    assert answer["detail"].startswith(starts), answer["detail"]
    assert not ResultUpload.objects.exists()
    assert not Sample.objects.exists()


@pytest.mark.parametrize("levels", [2, 40, 140])
def test_a_record_nested_deep_is_refused_with_a_400_naming_it(claimed, levels):
    deep = b"[" * levels + b"]" * levels  # within the plan's container bound (296)
    refused(post_raw(claimed, body(RECORD + deep + b"}")), "invalid upload: records[0].error")


def test_a_body_nested_past_msgspecs_recursion_limit_is_refused_as_before():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(JsonBodyError, match="body: nested deeper than 32 levels"):
        loads_items_raw(body(RECORD + deep + b"}"), max_containers=None, key="records")


def test_undecoded_records_nested_past_the_decoders_limit_are_refused_not_crashed():
    deep = msgspec.Raw(b"[" * 100_000 + b"]" * 100_000)
    document = {**result_document(0), "records": [deep]}
    with pytest.raises(UploadError, match="records: nested too deep"):
        parse_upload(document)


def test_an_envelope_nested_deeper_than_the_limit_is_refused_as_before(claimed):
    deep = json.loads("[" * 40 + "]" * 40)
    response = post_raw(claimed, body(RECORD + b"null}", engine={"version": "1", "x": deep}))
    refused(response, "body: nested deeper than 32 levels")


def test_more_containers_than_the_plan_allows_are_refused_before_decoding(claimed):
    # The plan sends 20 requests, so 2 * 20 + 256 objects and arrays at most.
    response = post_raw(claimed, body(b",".join([b"[]"] * 5000)))
    refused(response, "body: more than 296 objects and arrays")


def test_brackets_inside_strings_do_not_count_as_containers(claimed):
    # Counting bracket bytes overestimates here; the exact scan then accepts the body.
    message = json.dumps("HTTP 500: " + "[{" * 1000).encode()
    failed = (
        b'{"index": 0, "send_s": 0.0, "ttft_s": null, "itl_s": [], "e2e_s": null, '
        b'"input_tokens": 512, "output_tokens": 0, "status": 500, "error": ' + message + b"}"
    )
    response = post_raw(claimed, body(failed))
    assert response.status_code == 201, response.content
    assert Sample.objects.get().error.startswith("HTTP 500: [{[{")


FAILED = (
    b'{"index": 1, "send_s": 0.5, "ttft_s": null, "itl_s": [], "e2e_s": null, '
    b'"input_tokens": 512, "output_tokens": 0, "status": 500, "error": '
)
NUL_CASES = {
    "a request's error": (
        body(RECORD + b"null}, " + FAILED + b'"HTTP 500\\u0000"}'),
        f"invalid upload: records[1].error: {NUL_REFUSED}",
    ),
    "a finish reason": (
        body(RECORD + b'null, "finish_reason": "stop\\u0000"}'),
        f"invalid upload: records[0].finish_reason: {NUL_REFUSED}",
    ),
    "the engine's command": (
        body(RECORD + b"null}", engine={"effective_config": {"command": ["vllm", "a\x00"]}}),
        f"engine.effective_config.command[1]: {NUL_REFUSED}",
    ),
    "the harness version": (
        body(RECORD + b"null}", harness={"name": "h", "version": "0.1\x00"}),
        f"harness.version: {NUL_REFUSED}",
    ),
}


@pytest.mark.parametrize("case", NUL_CASES)
def test_a_nul_in_a_record_or_the_stack_it_reports_is_refused_naming_where(claimed, case):
    raw, message = NUL_CASES[case]
    refused(post_raw(claimed, raw), message)
    assert not EvidenceRun.objects.exists()


def test_one_upload_of_a_new_load_point_costs_at_most_seventeen_queries(claimed):
    # Twenty before issue 17's folding (idempotency, attempt and request count in one query;
    # no savepoint around the COPY); one more since a new load point reads its plan's request
    # schedule once, for the lengths it asked for (later chunks do not). The COPY and the
    # body's binary UPDATE run on psycopg's own cursors, which this count does not see.
    attempt, api = claimed
    api.upload(attempt.pk, result_document(0), key="warm")  # the run and its first result
    with CaptureQueriesContext(connection) as queries:
        response = api.upload(attempt.pk, result_document(1), key="second")
    assert response.status_code == 201, response.content
    assert len(queries.captured_queries) <= 17, [q["sql"][:80] for q in queries]
