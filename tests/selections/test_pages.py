"""The wizard pages: list, goal form, trace histograms, candidates, plan."""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.audit.models import AuditEvent
from apps.selections import selectors, services
from apps.selections.error_bands import error_band
from apps.selections.models import Selection
from apps.selections.tasks import compute_candidates
from tests.figures import page_figures
from tests.selections.helpers import create_selection, kv_short_goal, update_selection
from tests.selections.test_traces import CSV

pytestmark = pytest.mark.django_db

FORM = {
    "title": "Support bot",
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "isl_kind": "lognormal",
    "isl_tokens": "800",
    "isl_spread": "0.6",
    "osl_kind": "fixed",
    "osl_tokens": "200",
    "arrival": "poisson",
    "rate_rps": "3",
    "prefix_share": "0",
    "prefix_tokens": "0",
    "tool_share": "0",
    "ttft_ms": "800",
    "tpot_ms": "50",
    "percentile": "99",
    "attainment": "0.95",
    "accelerators": ["h100-sxm"],
    "max_gpus": "1",
    "required_features": "prefix_caching stable",
    "prices": "h100-sxm 2.5",
}


def test_the_list_shows_an_empty_state_first(alice_client):
    response = alice_client.get("/selections/")

    assert b"No selections yet" in response.content


def test_the_goal_form_stores_the_same_document_as_the_api(catalog, alice_client):
    response = alice_client.post("/selections/new/", FORM)

    selection = Selection.objects.get()
    assert response.status_code == 302
    assert selection.workload["isl"] == {"kind": "lognormal", "median": 800.0, "sigma": 0.6}
    assert selection.constraints["required_features"] == [
        {"feature": "prefix_caching", "min_maturity": "stable"}
    ]
    assert selection.constraints["prices"] == {"h100-sxm": 2.5}


def test_the_goal_form_shows_api_errors_on_the_fields_that_caused_them(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "isl_spread": "", "rate_rps": ""})

    form = response.context["form"]
    assert "isl_spread" in form.errors
    assert "rate_rps" in form.errors
    assert not Selection.objects.exists()


def test_the_detail_page_draws_trace_histograms_with_the_static_plotly(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.trace_upload(
        actor_user=alice, selection=selection, name="day.csv", content=CSV.encode()
    )

    page = alice_client.get(f"/selections/{selection.pk}/").content.decode()

    assert 'id="figure-lengths"' in page and 'id="figure-arrivals"' in page
    lengths = page_figures(page)["lengths"]
    assert [trace["type"] for trace in lengths["data"]] == ["histogram", "histogram"]
    assert lengths["layout"]["xaxis"]["title"]["text"] == "tokens"
    assert page.count("plotly.min") == 1 and "cdn" not in page.lower()


def test_the_candidate_page_lists_ranked_stacks_reasons_and_the_goodput_chart(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    alice_client.post(f"/selections/{selection.pk}/candidates/compute/")
    compute_candidates(selection.pk)  # what the Celery worker runs after the commit

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    goodput = page_figures(page)["goodput"]
    assert goodput["data"] and all(trace["mode"] == "lines+markers" for trace in goodput["data"])
    assert goodput["layout"]["title"]["text"] == "Predicted SLO goodput (simulated)"
    assert 'data-code="hardware_unsupported"' in page
    assert "req/s per GPU" in page
    assert "seed, SLO goodput per GPU ranks the list." in page  # words, not the API's key
    # KV capacities are written as every message writes a count, grouped by thousands
    kv = selection.candidates.filter(outcome="kept").first().estimate["memory"]
    assert kv["kv_capacity_tokens"] >= 1000
    assert f"KV {kv['kv_capacity_tokens']:,} tokens ({kv['max_concurrent_sequences']:,} " in page


def test_the_goodput_chart_draws_each_distinct_curve_once_with_its_layers_named(
    catalog, alice, acme, alice_client, goal_payload
):
    # a peak above the mean composes autoscaling layers on the leading stacks: their rows share
    # the base stack's curve, which the chart draws once
    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 4, "peak_factor": 2}
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    alice_client.post(f"/selections/{selection.pk}/candidates/compute/")
    compute_candidates(selection.pk)  # what the Celery worker runs after the commit
    with_curves = selection.candidates.filter(estimate__has_key="curve")
    curves = [row.estimate["curve"] for row in with_curves]
    assert len(curves) > len({repr(curve) for curve in curves}), "no two rows share a curve"

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    traces = page_figures(page)["goodput"]["data"]
    drawn = [(tuple(trace["x"]), tuple(trace["y"])) for trace in traces]
    assert len(drawn) == len(set(drawn)) == min(5, len({repr(curve) for curve in curves}))
    assert len({trace["name"] for trace in traces}) == len(traces)
    # the chart follows the list's filters: another engine's leaders are not drawn
    engine = with_curves.order_by("rank").first().stack["engine"]
    url = f"/selections/{selection.pk}/candidates/?engine={engine}"
    filtered = page_figures(alice_client.get(url).content.decode())["goodput"]["data"]
    assert filtered and all(f" {engine} " in f" {trace['name']}" for trace in filtered)
    assert len(filtered) < len(traces)


def test_the_page_says_when_the_simulated_comparison_mixes_methods(
    catalog, alice, acme, alice_client, goal_payload
):
    # AIConfigurator's kernels time the H100 leaders, the roofline the MI300X ones
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    mixed = create_selection(user=alice, team=acme, payload=goal_payload)
    goal_payload["constraints"].update(accelerators=["mi300x"])
    alone = create_selection(user=alice, team=acme, payload=goal_payload)
    for selection in (mixed, alone):
        alice_client.post(f"/selections/{selection.pk}/candidates/compute/")
        compute_candidates(selection.pk)

    mixed_page = alice_client.get(f"/selections/{mixed.pk}/candidates/").content.decode()
    alone_page = alice_client.get(f"/selections/{alone.pk}/candidates/").content.decode()

    note = re.search(
        r'id="mixed-methods">The simulated comparison mixes methods \(([^)]*)\)', mixed_page
    )
    assert note and note.group(1) == "aiconfigurator, simulated; roofline, simulated"
    assert 'id="mixed-methods"' not in alone_page


def test_the_page_says_how_the_simulated_replicas_read_against_their_analytic_figures(
    catalog, alice, acme, alice_client, goal_payload
):
    many = create_selection(user=alice, team=acme, payload=goal_payload)
    goal_payload["constraints"].update(accelerators=["mi300x"], max_gpus=1)
    few = create_selection(user=alice, team=acme, payload=goal_payload)
    for selection in (many, few):
        alice_client.post(f"/selections/{selection.pk}/candidates/compute/")
        compute_candidates(selection.pk)

    kept = many.candidates.filter(outcome="kept")
    assert kept.filter(estimate__comparison="analytic").exists()
    ratios = [
        row.estimate["goodput_per_gpu_rps"] / row.estimate["analytic_goodput_per_gpu_rps"]
        for row in kept.filter(estimate__comparison="simulated")
    ]
    page = alice_client.get(f"/selections/{many.pk}/candidates/").content.decode()
    note = re.search(
        r'id="simulated-share">Analytic rows are not comparable[^<]*? the (\d+) replicas? '
        r"simulated for this goal read \u00d7([\d.]+) to \u00d7([\d.]+)",
        page,
    )
    assert note, "no note beside a list of simulated and analytic rows"
    assert 1 <= int(note.group(1)) <= len(ratios)
    assert float(note.group(2)) == pytest.approx(min(ratios), abs=0.005)
    assert float(note.group(3)) == pytest.approx(max(ratios), abs=0.005)
    assert max(ratios) < 1  # queueing costs the simulated replicas goodput the analytic ignores
    # a list that is simulated throughout has nothing to warn of
    assert not few.candidates.filter(outcome="kept", estimate__comparison="analytic").exists()
    few_page = alice_client.get(f"/selections/{few.pk}/candidates/").content.decode()
    assert 'id="simulated-share"' not in few_page


def test_the_plan_step_marks_the_chosen_candidates(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    leader = selection.candidates.get(rank=1)

    alice_client.post(f"/selections/{selection.pk}/plan/", {"chosen": [str(leader.pk)]})

    assert list(selection.candidates.filter(chosen=True)) == [leader]


@pytest.mark.parametrize("step", ["candidates", "plan"])
@pytest.mark.parametrize("query", ["engine=vllm%00", "accelerator=%00h100-sxm", "q=%00"])
def test_a_list_filter_holding_nul_shows_its_error_and_filters_nothing(
    catalog, alice, acme, alice_client, goal_payload, step, query
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    url = f"/selections/{selection.pk}/{step}/"

    response = alice_client.get(f"{url}?{query}")

    assert response.status_code == 200
    page = response.content.decode()
    assert '<span class="errors small">' in page
    unfiltered = alice_client.get(url).content.decode()
    assert re.findall(r'data-rank="(\d+)"', page) == re.findall(r'data-rank="(\d+)"', unfiltered)
    assert re.findall(r'data-rank="(\d+)"', page)


def test_charlie_gets_404_on_every_page_of_alices_selection(
    catalog, alice, acme, charlie_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    for suffix in ("", "goal/", "candidates/", "plan/"):
        assert charlie_client.get(f"/selections/{selection.pk}/{suffix}").status_code == 404
    file = SimpleUploadedFile("day.csv", CSV.encode())
    response = charlie_client.post(f"/selections/{selection.pk}/traces/", {"file": file})
    assert response.status_code == 404


def test_the_list_pages_its_selections_25_at_a_time(
    catalog, alice, acme, alice_client, goal_payload
):
    for number in range(26):
        create_selection(user=alice, team=acme, payload={**goal_payload, "title": f"Goal {number}"})

    first = alice_client.get("/selections/")
    second = alice_client.get("/selections/?page=2")

    assert len(first.context["page"].object_list) == 25
    assert [s.title for s in second.context["page"].object_list] == ["Goal 0"]
    assert "Page 2 of 2 (26 in all)" in second.content.decode()


def test_archiving_asks_first_then_hides_the_selection_from_the_list(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    url = f"/selections/{selection.pk}/archive/"

    confirmation = alice_client.get(url).content.decode()
    selection.refresh_from_db()
    assert 'id="confirm-archive"' in confirmation and selection.state == "draft"

    assert alice_client.post(url).status_code == 302
    selection.refresh_from_db()
    assert selection.state == "archived"
    live = alice_client.get("/selections/").context["page"].object_list
    archived = alice_client.get("/selections/?archived=1").context["page"].object_list
    assert list(live) == [] and list(archived) == [selection]
    assert AuditEvent.objects.filter(action="selection.archive").count() == 1


def test_charlie_cannot_archive_alices_selection(
    catalog, alice, acme, charlie_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    assert charlie_client.post(f"/selections/{selection.pk}/archive/").status_code == 404
    selection.refresh_from_db()
    assert selection.state == "draft"


def test_dropped_groups_show_each_codes_count_and_up_to_three_examples(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    counts = Counter(
        reason["code"]
        for candidate in selection.candidates.filter(outcome="dropped")
        for reason in candidate.reasons
    )

    response = alice_client.get(f"/selections/{selection.pk}/candidates/")

    groups = response.context["groups"]
    assert {group.code: group.count for group in groups} == counts
    assert max(counts.values()) > 3
    assert all(len(group.examples) == min(3, group.count) for group in groups)
    page = response.content.decode()
    for group in groups:
        row = page.split(f'<tr data-code="{group.code}">')[1].split("</tr>")[0]
        assert f"<td>{group.count}</td>" in row


def test_the_groups_are_stored_with_the_candidates_and_cleared_with_the_goal(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    computed = services.candidates_compute(actor_user=alice, selection=selection)
    stored = selectors.dropped_groups(selection=computed)

    computed.dropped_groups = None  # what a selection computed before groups were stored has
    assert selectors.dropped_groups(selection=computed) == stored

    goal_payload["constraints"]["max_gpus"] = 2
    edited = update_selection(user=alice, selection=computed, payload=goal_payload)
    edited.refresh_from_db()
    assert edited.dropped_groups is None and not edited.candidates.exists()


def _kept_rows(page: str) -> list[dict[str, str]]:
    rows = re.findall(r"<tr data-candidate=[^>]*>", page)
    keys = ("rank", "score", "comparison", "gpus", "maturity", "cost", "tied")
    return [
        {key: re.search(rf'data-{key}="([^"]*)"', row).group(1) for key in keys} for row in rows
    ]


def test_the_candidate_page_shows_each_numbers_method_and_no_row_ties_but_by_the_rule(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(
        accelerators=["h100-sxm", "mi300x"], max_gpus=2, prices={"h100-sxm": 3, "mi300x": 2}
    )
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    rows = _kept_rows(page)
    assert len(rows) > 5
    assert "Ties: fewer GPUs, then higher maturity, then lower cost per hour" in page
    assert 'data-field="score-components"' in page
    assert "(roofline, simulated)" in page and "(roofline, analytic)" in page
    for above, below in pairwise(rows):
        if above["comparison"] != below["comparison"]:
            assert (above["comparison"], below["comparison"]) == ("simulated", "analytic")
            continue
        assert float(above["score"]) >= float(below["score"])
        keys_above = (int(above["gpus"]), -float(above["maturity"]), float(above["cost"]))
        keys_below = (int(below["gpus"]), -float(below["maturity"]), float(below["cost"]))
        if above["score"] == below["score"] and keys_above == keys_below:
            assert below["tied"] == "1", (above, below)  # shown as a tie, never hidden
        else:
            assert below["tied"] == "", (above, below)
            assert above["score"] != below["score"] or keys_above < keys_below
    # data-parallel copies of one replica (no expert group spans them) repeat its figures: they
    # fold under a summary
    kept = selection.candidates.filter(outcome="kept").order_by("rank")[: len(rows)]
    copies = [c for c in kept if c.stack["dp"] > 1 and c.stack["ep"] <= c.stack["tp"]]
    assert copies and len(copies) < len(rows)
    assert page.count('<details data-field="replica-copies">') == sum(
        not c.estimate["tied_with_above"] for c in copies
    )
    copy = copies[0]
    replica_gpus = copy.stack["gpu_count"] // copy.stack["dp"]
    assert f"{copy.stack['dp']} copies of one {replica_gpus}-GPU replica" in page


def test_a_tied_rows_figures_and_a_layer_rows_repeated_hints_fold_under_a_summary(
    catalog, alice, acme, alice_client, goal_payload
):
    # KV layers are composed over each engine, and a layer row ties with its engine's row
    selection = create_selection(user=alice, team=acme, payload=kv_short_goal(goal_payload))
    services.candidates_compute(actor_user=alice, selection=selection)

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    rows = _kept_rows(page)
    tied = sum(row["tied"] == "1" for row in rows)
    assert 0 < tied < len(rows)
    assert page.count('<details data-field="tied-figures">') == tied
    layered = selection.candidates.filter(outcome="kept").exclude(stack__layers=[]).count()
    assert page.count("a serving layer over the same stack: the estimate does not model") == layered
    # a layer row shows its own hint; those of the stack below, which it repeats, fold away
    layer_row = page.split('data-code="layer_composed"')[1].split("</tr>")[0]
    assert layer_row.count('<details data-field="base-hints">') == 1
    assert 'data-code="kv_capacity_short"' in layer_row.split('data-field="base-hints"')[1]


def test_the_candidate_page_shows_each_latencys_error_band_from_the_held_out_rows(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    ttft, tpot = error_band("roofline", "ttft"), error_band("roofline", "tpot")

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    assert f"TTFT {ttft.low * 100:+.0f}% to {ttft.high * 100:+.0f}%" in page
    assert f"TPOT {tpot.low * 100:+.0f}% to {tpot.high * 100:+.0f}%" in page
    assert f"{ttft.rows} held-out published rows" in page and ttft.measured_on in page
    assert "goodput: no band measured" in page
    assert "Error bands: none yet" not in page


def test_a_simulated_capacity_shows_its_band_from_published_maximum_load_cells(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    capacity = error_band("roofline", "capacity")

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    simulated = selection.candidates.filter(
        outcome="kept", estimate__replica_capacity_rps__isnull=False
    ).count()
    assert simulated > 0
    band = f"band {capacity.low * 100:+.0f}% to {capacity.high * 100:+.0f}%"
    assert page.count(band) == page.count('data-field="capacity-band"') == min(simulated, 50)
    assert f"{capacity.rows} published maximum-load cells no fit used" in page
    # The band measures the overview's own runs, not the steady state shown beside it.
    assert "each predicted as the TensorRT-LLM performance overview ran it" in page


def test_a_simulated_capacity_is_shown_with_its_band_and_whether_the_band_covers_the_stack(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"]["accelerators"] = ["h100-sxm"]  # TensorRT-LLM among the leaders
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    simulated = list(
        selection.candidates.filter(
            outcome="kept", estimate__replica_capacity_rps__isnull=False
        ).order_by("rank")
    )

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    covered = {c.stack["engine"] == "tensorrt-llm" for c in simulated}
    assert covered == {True, False}, "the goal should simulate TensorRT-LLM and other engines"
    for candidate in simulated:
        band = candidate.estimate["error_band"]["replica_capacity_rps"]
        assert band["covers_stack"] is (candidate.stack["engine"] == "tensorrt-llm"), candidate
    top = simulated[0].estimate["replica_capacity_rps"]
    assert f"capacity {top:.3f} req/s per replica at saturation" in page
    outside = sum(
        not c.estimate["error_band"]["replica_capacity_rps"]["covers_stack"] for c in simulated
    )
    assert page.count('data-field="capacity-band-outside"') == outside
    assert "so no measured bound for it" in page
    # Each simulated stack names the budgets it was scheduled with and where they come from.
    for candidate in simulated:
        scheduler = candidate.estimate["scheduler"]
        assert scheduler["note"].startswith("scheduled as "), scheduler
        assert f"{scheduler['max_num_batched_tokens']:,} tokens per step" in scheduler["note"]
    assert page.count('data-field="scheduler"') == min(len(simulated), 50)
