"""The evidence of a selection through the API and the page: comparability, missing metrics,
team scoping, CSV downloads and a bounded number of queries."""

from __future__ import annotations

import csv
import io
from statistics import mean

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.evidence.factories import (
    DRAWN_OUTPUTS,
    answered,
    drawn_outputs_plan,
    measured_attempt,
    plan_for,
)
from tests.evidence.samples import failed, record, streamed

API = "/api/v1/selections/{}/evidence/"
PAGE = "/evidence/selections/{}/"


def fast(count: int = 6, ttft_s: float = 0.1) -> list[dict]:
    return [streamed(i, ttft_s=ttft_s, gaps=[0.02, 0.02]) for i in range(count)]


def test_a_candidate_under_another_identity_is_not_comparable_and_names_the_fields(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], fast())
    other_plan = plan_for(selection, load_points=[{"rate_rps": 1.0}], request_count=40)
    measured_attempt(other_plan, candidates[1], fast())

    body = alice_client.get(API.format(selection.pk)).json()

    reference, other = body["candidates"]
    assert reference["comparability"] == {"status": "reference", "differing": []}
    assert other["comparability"] == {
        "status": "not_comparable",
        "differing": ["arrival.request_count"],
    }
    page = alice_client.get(PAGE.format(selection.pk)).content.decode()
    assert "not_comparable" in page and "differs in: arrival.request_count" in page


def test_candidates_of_one_plan_compare_although_their_stacks_differ(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], fast())
    measured_attempt(plan, candidates[1], fast(ttft_s=0.2))

    body = alice_client.get(API.format(selection.pk)).json()

    statuses = [entry["comparability"]["status"] for entry in body["candidates"]]
    assert statuses == ["reference", "comparable"]
    point = body["candidates"][1]["load_points"][0]
    # One run each: no interval, so no verdict beyond "missing".
    assert point["statistics"]["ttft_p50_ms"] == {"interval": None, "verdict": "missing"}
    assert point["metrics"]["ttft_p50_ms"] == pytest.approx(200.0)


def test_a_metric_that_was_not_measured_is_null_and_listed_as_missing(
    alice_client, selection, plan, candidates
):
    unstreamed = [record(i, itl_s=None, ttft_s=None) for i in range(4)]
    measured_attempt(plan, candidates[0], unstreamed)

    body = alice_client.get(API.format(selection.pk)).json()

    point = body["candidates"][0]["load_points"][0]
    assert point["metrics"]["itl_p50_ms"] is None
    assert point["metrics"]["ttft_p99_ms"] is None
    assert {"itl_p50_ms", "ttft_p99_ms", "tpot_p50_ms"} <= set(point["missing"])
    assert point["metrics"]["errors"] == 0.0
    page = alice_client.get(PAGE.format(selection.pk)).content.decode()
    assert 'data-metric="itl_p99_ms"><span class="muted missing">missing</span>' in page


def test_a_load_point_over_the_plans_error_budget_is_flagged_on_the_page_and_in_the_api(
    alice_client, selection, plan, candidates
):
    assert plan.identity["failure_policy"]["max_error_rate"] == 0.05
    measured_attempt(plan, candidates[0], [*fast(5), failed(5)])  # one of six failed
    measured_attempt(plan, candidates[1], fast(6))

    body = alice_client.get(API.format(selection.pk)).json()

    points = {entry["candidate_id"]: entry["load_points"][0] for entry in body["candidates"]}
    failing, clean = points[candidates[0].pk], points[candidates[1].pk]
    assert failing["error_share"] == pytest.approx(1 / 6)
    assert (failing["over_error_budget"], failing["error_budget"]) == (True, 0.05)
    assert (clean["error_share"], clean["over_error_budget"]) == (0.0, False)
    page = alice_client.get(PAGE.format(selection.pk)).content.decode()
    assert page.count("data-error-budget") == len(plan.load_points)
    assert "17% failed, over the plan's 5%" in page


def test_a_load_point_is_judged_against_the_lengths_its_own_schedule_asked_for(
    alice_client, selection, candidates
):
    plan = drawn_outputs_plan(selection)
    asked = mean(request["output_tokens"] for request in plan.requests)
    assert abs(asked - DRAWN_OUTPUTS["mean"]) > 0.05 * DRAWN_OUTPUTS["mean"]
    measured_attempt(plan, candidates[0], answered(plan))  # every length as asked
    measured_attempt(plan, candidates[1], answered(plan, share=0.5))  # outputs cut short

    body = alice_client.get(API.format(selection.pk)).json()

    points = {entry["candidate_id"]: entry["load_points"][0] for entry in body["candidates"]}
    exact, short = points[candidates[0].pk], points[candidates[1].pk]
    assert (exact["isl_off_target"], exact["osl_off_target"]) == (False, False)
    assert (short["isl_off_target"], short["osl_off_target"]) == (False, True)


def test_charlie_cannot_read_alices_evidence(charlie_client, selection, plan, candidates):
    measured_attempt(plan, candidates[0], fast())

    for path in ("", "samples.csv", "summaries.csv", "import/"):
        assert charlie_client.get(PAGE.format(selection.pk) + path).status_code == 404
    assert charlie_client.get(API.format(selection.pk)).status_code == 404


def test_the_samples_csv_lists_every_request_with_empty_cells_for_missing_values(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], [*fast(3), record(3, itl_s=None)])

    response = alice_client.get(PAGE.format(selection.pk) + "samples.csv")

    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 8  # four requests at each of the two load points
    assert rows[0]["itl_s"] == "0.02 0.02"
    assert float(rows[0]["tpot_s"]) == pytest.approx(0.02)
    assert rows[3]["itl_s"] == "" and rows[3]["itl_count"] == ""


def test_the_summaries_csv_has_a_row_per_candidate_and_load_point(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], fast())

    response = alice_client.get(PAGE.format(selection.pk) + "summaries.csv")

    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["load_point"] for row in rows] == ["rate 1 req/s", "rate 2 req/s"]
    assert float(rows[0]["ttft_p50_ms"]) == pytest.approx(100.0)


def _queries(client, selection_id: int) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(API.format(selection_id)).status_code == 200
    return len(captured)


def test_the_evidence_endpoint_reads_a_fixed_number_of_queries_whatever_the_runs(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], fast())
    few = _queries(alice_client, selection.pk)
    for number in (2, 3):
        measured_attempt(plan, candidates[0], fast(), number=number)
        measured_attempt(plan, candidates[1], fast(), number=number)

    assert _queries(alice_client, selection.pk) == few


def test_the_openapi_schema_documents_the_evidence_and_import_endpoints(alice_client):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    evidence = schema["paths"]["/api/v1/selections/{selection_id}/evidence/"]["get"]
    assert evidence["operationId"] == "selections_evidence"
    assert (
        "multipart/form-data"
        in (schema["paths"]["/api/v1/evidence/imports/"]["post"]["requestBody"]["content"])
    )
