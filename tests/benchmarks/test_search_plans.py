"""Max-rate search plans: the spec's search section, probe uploads and what the plan page shows."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from apps.benchmarks.models import BenchmarkPlan, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import result_document

SEARCH = "max_rate_search"


def search_plan(alice, acme, selection, **options: Any):
    values = {"mode": SEARCH, "run_mode": "simulated", "request_count": 20, **options}
    return plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions(**values)
    )


@pytest.fixture
def claimed_search(alice, acme, selection, sim_runner):
    """A search plan (default ladder: 1, 2 and 4 req/s) whose attempt the runner claimed."""
    plan = search_plan(alice, acme, selection, max_probes=6)
    attempt = plan.jobs.get().attempts.get()
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    return plan, attempt, api


def timed(index: int, ttft_s: float, tpot_s: float = 0.02) -> dict[str, Any]:
    """A four-token streamed request (the factory's SLO: TTFT 500 ms, TPOT 50 ms)."""
    return {
        "index": index,
        "send_s": index * 0.5,
        "ttft_s": ttft_s,
        "itl_s": [tpot_s] * 3,
        "e2e_s": ttft_s + 3 * tpot_s,
        "input_tokens": 512,
        "output_tokens": 4,
        "error": None,
        "status": 200,
    }


def probe(index: int, rate: float, records: list[dict], chunk: int = 0, chunks: int = 1) -> dict:
    document = result_document(index, records=records)
    return {
        **document,
        "load_point": {"index": index, "rate_rps": rate},
        "chunk_index": chunk,
        "chunk_count": chunks,
    }


ALL_MEET = [timed(i, 0.1) for i in range(4)]
# One of four misses TTFT (600 ms > 500 ms) and one fails outright: 2 of 4 meet.
HALF_MEET = [
    timed(0, 0.1),
    timed(1, 0.6),
    timed(2, 0.2),
    {**timed(3, 0.1), "ttft_s": None, "e2e_s": None, "itl_s": [], "error": "timeout"},
]


def test_a_search_plan_sends_the_slo_and_the_range_of_its_rates_to_the_runner(
    alice, acme, selection, sim_runner
):
    plan = search_plan(alice, acme, selection, request_count=30)
    attempt = plan.jobs.get().attempts.get()
    _, api = sim_runner
    spec = api.post(f"attempts/{attempt.pk}/claim").json()
    # The goal is 2 req/s: the ladder is 1, 2 and 4; the search starts at sqrt(1 * 4) = 2.
    assert spec["search"] == {
        "slo": {
            "ttft_ms": 500,
            "tpot_ms": 50,
            "e2e_ms": None,
            "percentile": 99.0,
            "attainment": 0.99,
        },
        "start_rate_rps": 2.0,
        "min_rate_rps": 1.0,
        "max_rate_rps": 4.0,
        "tolerance": 0.05,
        "max_probes": 8,
        "requests_per_probe": 30,
    }
    assert plan.identity["search"] == spec["search"]


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (({"rate_rps": 2.0},), "needs two different rates"),
        (({"rate_rps": 1.0}, {"concurrency": 4}), "takes rates, not concurrencies"),
    ],
)
def test_a_search_plan_without_a_range_of_rates_is_refused(alice, acme, selection, points, message):
    with pytest.raises(ValidationError) as refused:
        search_plan(alice, acme, selection, load_points=points)
    assert message in str(refused.value.message_dict["load_points"])


def test_a_search_plan_needs_a_latency_target_in_the_slo(alice, acme, selection):
    selection.slo = {"attainment": 0.9}
    selection.save()
    with pytest.raises(ValidationError) as refused:
        search_plan(alice, acme, selection)
    assert "set at least one of the TTFT, TPOT and E2E targets" in str(
        refused.value.message_dict["slo"]
    )


def test_probes_beyond_the_plans_load_points_are_accepted_up_to_max_probes(claimed_search):
    plan, attempt, api = claimed_search
    assert len(plan.load_points) == 3
    fifth = api.upload(attempt.pk, probe(5, 3.0, ALL_MEET), key="p5")
    assert fifth.status_code == 201, fifth.content
    sixth = api.upload(attempt.pk, probe(6, 3.0, ALL_MEET), key="p6")
    assert sixth.status_code == 400
    assert "the plan has 6 load point(s)" in sixth.content.decode()


def test_a_probe_without_its_rate_is_refused_naming_the_field(claimed_search):
    _, attempt, api = claimed_search
    document = {**probe(0, 2.0, ALL_MEET), "load_point": {"index": 0, "concurrency": 2}}
    response = api.upload(attempt.pk, document, key="p0")
    assert response.status_code == 400
    assert "load_point.rate_rps" in response.content.decode()
    assert not ResultUpload.objects.exists()


def test_the_plan_page_shows_each_probe_as_it_lands_and_the_bracket(claimed_search, alice_client):
    plan, attempt, api = claimed_search
    url = f"/benchmarks/{plan.pk}/progress.json"
    api.upload(attempt.pk, probe(0, 2.0, ALL_MEET), key="p0")
    search = alice_client.get(url).json()["jobs"][0]["search"]
    assert [(p["rate_rps"], p["attainment"], p["passed"]) for p in search["probes"]] == [
        (2.0, 1.0, True)
    ]
    assert search["answer"]["bound"] == "at_least"

    api.upload(attempt.pk, probe(1, 4.0, HALF_MEET), key="p1")
    api.upload(attempt.pk, probe(2, 3.0, ALL_MEET), key="p2")
    search = alice_client.get(url).json()["jobs"][0]["search"]
    assert [(p["rate_rps"], p["attainment"], p["passed"]) for p in search["probes"]] == [
        (2.0, 1.0, True),
        (4.0, 0.5, False),
        (3.0, 1.0, True),
    ]
    answer = search["answer"]
    # Pass at 3, fail at 4; interpolated where attainment crosses 0.99: 3 + 0.01 / 0.5 = 3.02.
    assert (answer["bound"], answer["low_rps"], answer["high_rps"]) == ("interpolated", 3.0, 4.0)
    assert answer["rate_rps"] == pytest.approx(3.02)
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert "Meets the SLO at 3 req/s, misses it at 4 req/s (bracket 25.0% wide" in page
    assert page.count('<span class="state state-failed">fail</span>') == 1


def test_a_probe_in_two_chunks_is_judged_once_both_arrived_on_all_its_requests(
    claimed_search, alice_client
):
    plan, attempt, api = claimed_search
    url = f"/benchmarks/{plan.pk}/progress.json"
    api.upload(attempt.pk, probe(0, 2.0, ALL_MEET, chunk=0, chunks=2), key="c0")
    (waiting,) = alice_client.get(url).json()["jobs"][0]["search"]["probes"]
    assert (waiting["complete"], waiting["passed"]) == (False, None)
    second_half = [{**record, "index": record["index"] + 4} for record in HALF_MEET]
    api.upload(attempt.pk, probe(0, 2.0, second_half, chunk=1, chunks=2), key="c1")
    (judged,) = alice_client.get(url).json()["jobs"][0]["search"]["probes"]
    # 4 of 4 and 2 of 4 requests meet the SLO: 6 of 8.
    assert (judged["requests"], judged["attainment"], judged["passed"]) == (8, 0.75, False)
    assert alice_client.get(url).json()["jobs"][0]["search"]["answer"]["bound"] == "below_range"


def test_the_plan_form_makes_a_search_between_the_rates_given(alice_client, selection):
    response = alice_client.post(
        f"/benchmarks/new/{selection.pk}/",
        {
            "mode": SEARCH,
            "load_kind": "rate_rps",
            "load_levels": "1, 9",
            "request_count": 30,
            "max_probes": 5,
            "seed": 0,
            "warmup_requests": 2,
            "measurement_window_s": 60,
            "max_error_rate": 0.05,
            "max_attempts": 2,
            "request_timeout_s": 60,
            "endpoint": "completions",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    plan = BenchmarkPlan.objects.get()
    # The search starts at the geometric middle of 1 and 9: 3 req/s.
    assert (plan.search["start_rate_rps"], plan.search["max_probes"]) == (3.0, 5)
    page = alice_client.get(response.url).content.decode()
    assert "No probe has finished yet." in page
