"""The nearest published measurements beside the team's predictions: in /estimate and on the
candidate and compare pages, each labelled as published by its source, never as our own."""

from __future__ import annotations

import html
import math
import re
from dataclasses import replace
from io import StringIO

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string

from apps.audit.services import Actor
from apps.catalog import published_overview
from apps.catalog.published_sample import SOURCE_NAME
from apps.catalog.selectors import (
    FITTABLE_NOTE,
    LEFT_OUT_NOTE,
    UNFITTED_NOTE,
    nearest_published_many,
)
from apps.catalog.services import published_import
from apps.selections import services
from tests.catalog.published_rows import OVERVIEW_GOAL, sample_row
from tests.selections.helpers import H100_VLLM_ESTIMATE, create_selection

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(catalog) -> None:
    """Two published rows of Llama-3.1-8B on one H100 with vLLM: the goal's lengths and longer
    prompts."""
    rows = [sample_row(id="exact"), sample_row(id="longer", isl="4096")]
    published_import(actor=Actor.system("test"), rows=rows)


def _estimate(client, payload):
    return client.post("/api/v1/estimate/", payload, content_type="application/json")


def test_the_estimate_answers_the_nearest_published_rows_with_their_source_and_differences(
    published, alice_client
):
    response = _estimate(alice_client, H100_VLLM_ESTIMATE)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["published_note"] is None
    assert [row["source"]["row"] for row in body["published"]] == ["exact", "longer"]
    first, second = body["published"]
    assert first["evidence"] == "published"
    assert first["source"] == {
        "name": SOURCE_NAME,
        "url": "https://pypi.org/project/aiconfigurator-core/0.12.0/",
        "licence": "Apache-2.0",
        "as_of": "2026-12-01",
        "row": "exact",
    }
    assert (first["ttft_ms"], first["tpot_ms"], first["isl"], first["concurrency"]) == (
        80.5,
        7.25,
        1024,
        16,
    )
    # the catalog's vLLM release is not the one the source measured
    version = body["engine_version"]
    assert first["differences"] == [f"engine version 0.19.0 vs the stack's {version}"]
    assert "ISL 4096 vs the goal's 1024" in second["differences"]
    assert first["held_out"] is False and first["fit_use"]


def test_an_estimate_at_a_rate_weighs_the_requests_its_own_time_keeps_in_flight(
    published, alice_client
):
    body = _estimate(alice_client, {**H100_VLLM_ESTIMATE, "rate_rps": 4}).json()

    in_flight = math.ceil(4 * body["e2e_ms"] / 1e3)  # Little's law on the answer's own time
    first = body["published"][0]
    assert first["differences"][-1] == (
        "concurrency 16 (closed loop) vs the goal's rate of 4 req/s "
        f"(open loop, about {in_flight} in flight by the stack's predicted time)"
    )
    assert first["distance"] == pytest.approx(
        1 + 0.5 * abs(math.log2(16 / in_flight)), abs=1e-3
    )  # another engine version, and the clients' doublings from the predicted load


def test_the_estimate_for_a_model_without_published_rows_answers_none_and_says_why(
    published, alice_client
):
    body = _estimate(
        alice_client, {**H100_VLLM_ESTIMATE, "model": "llama-3.1-70b", "gpu_count": 2, "tp": 2}
    )

    assert body.json()["published"] == []
    assert body.json()["published_note"] == (
        "the catalog holds no published measurement of llama-3.1-70b"
    )


def test_the_openapi_schema_describes_each_published_row_and_its_source(catalog, alice_client):
    schemas = alice_client.get("/api/schema/?format=json").json()["components"]["schemas"]

    row = schemas["PublishedRow"]["properties"]
    assert {"evidence", "source", "differences", "held_out", "distance", "prompt_load"} <= set(row)
    assert "engine_batch" in row
    assert {"name", "url", "licence", "as_of"} <= set(schemas["PublishedSource"]["properties"])


def _computed(alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    return selection


def test_the_candidate_page_shows_each_stacks_nearest_published_rows_labelled_by_their_source(
    published, alice, acme, alice_client, goal_payload
):
    selection = _computed(alice, acme, goal_payload)

    page = html.unescape(
        alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    )

    kept = selection.candidates.filter(outcome="kept").count()
    assert kept > 0
    assert page.count('data-field="published"') == min(kept, 50)
    assert 'published by <a href="https://pypi.org/project/aiconfigurator-core/0.12.0/"' in page
    assert f"{SOURCE_NAME}</a>, as of 2026-12-01" in page
    assert "not the team's own evidence" in page
    assert page.count('data-source-row="exact"') == min(kept, 50)
    # the goal arrives at a rate; the published rows were measured at a fixed concurrency, and
    # the rate is put in the same terms by each stack's own predicted time in the system
    loads = re.findall(
        r"concurrency 16 \(closed loop\) vs the goal's rate of 4 req/s \(open loop, about "
        r"(\d+) in flight by the stack's predicted time\)",
        page,
    )
    assert loads and all(int(load) >= 1 for load in loads)


def test_the_candidate_page_says_so_when_the_model_has_no_published_rows(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = _computed(alice, acme, goal_payload)

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    # Said once above the table, not in an empty column on every row.
    assert page.count('data-field="published-empty"') == 1
    assert "the catalog holds no published measurement of llama-3.1-8b" in page
    assert "published by " not in page and "Published by others" not in page


def test_the_compare_page_shows_the_published_rows_of_each_compared_stack(
    published, alice, acme, alice_client, goal_payload
):
    selection = _computed(alice, acme, goal_payload)
    picks = list(selection.candidates.filter(outcome="kept").order_by("rank")[:2])
    selection.candidates.filter(pk__in=[c.pk for c in picks]).update(chosen=True)

    response = alice_client.get(
        f"/selections/{selection.pk}/compare/", {"ids": [str(c.pk) for c in picks]}
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('data-field="published"') == 2
    assert f"{SOURCE_NAME}</a>, as of 2026-12-01" in page


def test_the_candidate_api_lists_each_kept_stacks_nearest_published_rows(
    published, alice, acme, alice_client, goal_payload
):
    selection = _computed(alice, acme, goal_payload)

    body = alice_client.get(f"/api/v1/selections/{selection.pk}/candidates/").json()

    assert body["kept"]
    for candidate in body["kept"]:
        rows = candidate["published"]
        assert [row["source"]["row"] for row in rows] == ["exact", "longer"]
        assert rows[0]["evidence"] == "published"
        assert rows[0]["source"]["licence"] == "Apache-2.0"


H200_TRTLLM_STACK = {
    "model": "llama-3.3-70b",
    "precision": "fp8",
    "accelerator": "h200-sxm",
    "gpu_count": 2,
    "tp": 2,
    "isl": 1000,
    "osl": 1000,
    "engine": "tensorrt-llm",
    "concurrency": 32,
}


# On one H100 at 16 bits, 16 clients finishing a 1,024-token prompt every 0.4 s would need about
# two thirds of the GPU's dense peak for the prompts alone: more than the roofline assumes.
TOO_FAST = {"silicon_ttft_ms": "20", "silicon_tpot_ms": "1.5"}
PUBLISHED_TEMPLATE = "selections/_published.html"
# The same run's conditions with the engine's batch capped at 4 of the 16 clients, whose other
# requests queued inside it (slower per token: its own figures, so it is a run of its own).
CAPPED = {"batch_size": "4", "silicon_tpot_ms": "21.5"}


def test_the_estimate_says_which_published_rows_do_not_add_up_from_a_cold_cache(
    catalog, alice_client
):
    rows = [sample_row(id="exact"), sample_row(id="too-fast", **TOO_FAST)]
    published_import(actor=Actor.system("test"), rows=rows)

    body = _estimate(alice_client, H100_VLLM_ESTIMATE).json()

    loads = {row["source"]["row"]: row["prompt_load"] for row in body["published"]}
    # 16 / (80.5 ms + 255 x 7.25 ms) requests a second x 1,024 x 2 x 8.03e9 FLOPs / 989 TFLOPS
    assert loads["exact"]["share_of_peak"] == pytest.approx(0.1379, abs=1e-4)
    assert loads["exact"]["beyond_assumed"] is False
    assert loads["too-fast"]["share_of_peak"] == pytest.approx(0.6610, abs=1e-4)
    assert loads["too-fast"]["beyond_assumed"] is True
    assert "prompt-cache hits" in loads["too-fast"]["note"]


def _rendered_beside_a_plain_row(odd: dict[str, str]) -> tuple[str, str]:
    """The page's published block for a row with `odd` conditions and for the plain row."""
    rows = [sample_row(id="exact"), sample_row(id="odd", **odd)]
    published_import(actor=Actor.system("test"), rows=rows)
    goal = replace(OVERVIEW_GOAL, model_slug="llama-3.1-8b", accelerator_slug="h100-sxm")
    (entries,) = nearest_published_many([goal])
    by_row = {entry["source"]["row"]: [entry] for entry in entries}
    return tuple(
        html.unescape(render_to_string(PUBLISHED_TEMPLATE, {"published_rows": by_row[key]}))
        for key in ("odd", "exact")
    )


@pytest.mark.parametrize(
    ("odd", "field", "says"),
    [
        (
            TOO_FAST,
            "prompt-load",
            "Does not add up from a cold cache: its figures imply at least 66%",
        ),
        (CAPPED, "engine-batch", "batch of 4 per rank for 16 clients per rank"),
    ],
)
def test_a_published_row_the_loop_cannot_reproduce_is_marked_on_the_page(catalog, odd, field, says):
    flagged, plain = _rendered_beside_a_plain_row(odd)

    assert f'data-field="{field}"' in flagged and says in flagged
    assert LEFT_OUT_NOTE in flagged
    assert f'data-field="{field}"' not in plain and FITTABLE_NOTE in plain


def test_a_maximum_load_row_states_no_clients_so_its_prompt_load_and_batch_are_null(overview):
    (rows,) = nearest_published_many([OVERVIEW_GOAL])

    assert rows[0]["prompt_load"] is None
    assert rows[0]["engine_batch"] is None


def test_the_estimate_says_which_published_rows_ran_more_clients_than_their_engine_batch(
    catalog, alice_client
):
    rows = [
        sample_row(id="exact"),
        sample_row(id="capped", **CAPPED),
        sample_row(id="too-fast", **TOO_FAST),
    ]
    published_import(actor=Actor.system("test"), rows=rows)

    body = _estimate(alice_client, H100_VLLM_ESTIMATE).json()

    by_row = {row["source"]["row"]: row for row in body["published"]}
    capped, exact = by_row["capped"]["engine_batch"], by_row["exact"]["engine_batch"]
    assert (capped["batch_size"], capped["clients_per_rank"], capped["holds_clients"]) == (
        4,
        16,
        False,
    )
    assert "waited inside the engine" in capped["note"]
    assert (exact["batch_size"], exact["holds_clients"]) == (16, True)
    # the calibration fits on neither row the loop cannot reproduce, and says so
    assert by_row["exact"]["fit_use"] == FITTABLE_NOTE
    assert by_row["capped"]["fit_use"] == LEFT_OUT_NOTE
    assert by_row["too-fast"]["fit_use"] == LEFT_OUT_NOTE


@pytest.fixture
def overview(catalog, monkeypatch) -> None:
    """The TensorRT-LLM overview's cells, imported as `make run` does (no sample wheel here)."""
    monkeypatch.setattr("apps.catalog.aiconfigurator_wheel.AVAILABLE", False)
    call_command("published_import", if_available=True, stdout=StringIO())


def test_the_estimate_shows_a_maximum_load_row_with_its_latency_null_never_zero(
    overview, alice_client
):
    response = _estimate(alice_client, H200_TRTLLM_STACK)

    assert response.status_code == 200, response.json()
    nearest = response.json()["published"][0]
    assert nearest["source"]["name"] == published_overview.SOURCE_NAME
    assert (nearest["ttft_ms"], nearest["tpot_ms"], nearest["concurrency"]) == (None, None, None)
    assert (nearest["output_tokens_s_per_gpu"], nearest["scenario"]) == (2587.0, "max_throughput")
    assert (
        "maximum load (every request queued at once) vs the goal's concurrency 32"
        in (nearest["differences"])
    )


def test_the_published_row_on_a_page_says_what_the_source_did_not_publish(overview):
    (rows,) = nearest_published_many([OVERVIEW_GOAL])

    page = render_to_string("selections/_published.html", {"published_rows": rows[:1]})

    assert "TTFT not published, TPOT not published, 2587 output tokens/s per GPU" in page
    assert "TTFT 0" not in page and "TPOT 0" not in page
    assert "maximum load (every request queued at once)" in page
    assert 'data-scenario="max_throughput"' in page
    assert UNFITTED_NOTE in html.unescape(page)


def test_a_row_of_the_stacks_gpu_engine_and_precision_near_its_conditions_is_marked_near(
    published, alice_client
):
    same = _estimate(alice_client, H100_VLLM_ESTIMATE).json()["published"]
    other_precision = _estimate(alice_client, {**H100_VLLM_ESTIMATE, "precision": "fp8"}).json()

    # the exact row differs by its engine version (1), the longer one by two doublings more (3)
    assert [(row["source"]["row"], row["near"]) for row in same] == [
        ("exact", True),
        ("longer", True),
    ]
    # another precision costs 4: the same rows are context for an FP8 stack, not a check
    assert [row["near"] for row in other_precision["published"]] == [False, False]


def test_the_page_folds_published_rows_under_a_caution_when_none_is_near(published):
    goal = replace(OVERVIEW_GOAL, model_slug="llama-3.1-8b", accelerator_slug="h100-sxm")
    near_goal = replace(goal, engine_slug="vllm", precision="bf16", tp=1, isl=1024, osl=256)
    far_goal = replace(near_goal, precision="fp8")

    near, far = (
        html.unescape(render_to_string(PUBLISHED_TEMPLATE, {"published_rows": rows}))
        for rows in nearest_published_many([near_goal, far_goal])
    )

    assert 'data-field="published-far"' not in near
    assert near.index('data-source-row="exact"') < near.index("<details>")
    assert "No published row is near this stack's conditions" in far
    assert far.index("<details>") < far.index('data-source-row="exact"')
    assert "2 published rows under other conditions" in far
    assert far.count("<details>") == far.count("</details>") == 1


def test_a_goal_whose_prompts_share_a_prefix_is_told_no_published_row_states_one(
    published, alice, acme, alice_client, goal_payload
):
    prefix = {"prefix_share": 0.8, "prefix_tokens": 512}
    said = (
        "prompts with no shared prefix stated vs the goal's 80% opening with a shared "
        "512-token prefix"
    )

    estimate = _estimate(alice_client, {**H100_VLLM_ESTIMATE, **prefix}).json()
    goal_payload["workload"].update(prefix)
    selection = _computed(alice, acme, goal_payload)
    listed = alice_client.get(f"/api/v1/selections/{selection.pk}/candidates/").json()

    assert [row["differences"][-1] for row in estimate["published"]] == [said, said]
    assert listed["kept"]
    assert all(said in c["published"][0]["differences"] for c in listed["kept"])
