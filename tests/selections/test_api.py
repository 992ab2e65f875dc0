"""The selections API: create with strict validation, team isolation, candidates, estimate."""

from __future__ import annotations

import pytest

from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import Accelerator, Capability, ModelSpec
from apps.selections import services
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.error_bands import error_band
from apps.selections.estimator import (
    Parallelism,
    estimate_latency,
    estimate_memory,
    max_concurrency_at_tpot,
)
from apps.selections.models import Selection
from apps.selections.tasks import compute_candidates
from tests.selections.helpers import create_selection, kv_short_goal

pytestmark = pytest.mark.django_db
URL = "/api/v1/selections/"


def _post(client, url, payload):
    return client.post(url, payload, content_type="application/json")


def test_alice_creates_a_selection_and_reads_it_back(catalog, alice_client, goal_payload):
    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 201, response.json()
    body = alice_client.get(f"{URL}{response.json()['id']}/").json()
    assert body["workload"]["model"] == "llama-3.1-8b"
    assert body["workload"]["precision"] == ["bf16"]
    assert body["constraints"]["accelerators"] == ["h100-sxm", "l4", "mi300x"]
    assert Selection.objects.get().model.slug == "llama-3.1-8b"


def test_validation_errors_are_400_with_nested_field_paths(catalog, alice_client, goal_payload):
    goal_payload["workload"]["isl"] = {"kind": "normal", "mean": 900}
    goal_payload["workload"]["model"] = "no-such-model"
    goal_payload["constraints"]["required_features"] = [
        {"feature": "prefix_caching", "min_maturity": "legendary"}
    ]
    goal_payload["slo"] = {"percentile": 99}

    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 400
    errors = response.json()
    assert "std" in errors["workload"]["isl"]
    assert "model" in errors["workload"]
    assert "min_maturity" in errors["constraints"]["required_features"]["0"]
    assert "ttft_ms" in errors["slo"]
    assert not Selection.objects.exists()


def test_an_arrival_needs_exactly_one_of_rate_and_concurrency(catalog, alice_client, goal_payload):
    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 2, "concurrency": 4}

    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 400
    assert "rate_rps" in response.json()["workload"]["arrival"]


def test_a_shared_prefix_longer_than_every_prompt_is_a_400_on_prefix_tokens(
    catalog, alice_client, goal_payload
):
    goal_payload["workload"].update(prefix_share=0.5, prefix_tokens=5000)
    fixed = alice_client.post(URL, goal_payload, content_type="application/json")
    goal_payload["workload"]["isl"] = {"kind": "lognormal", "median": 1024, "sigma": 1}
    unbounded = alice_client.post(URL, goal_payload, content_type="application/json")
    goal_payload["workload"]["isl"]["max"] = 4096
    capped = alice_client.post(URL, goal_payload, content_type="application/json")

    assert fixed.status_code == 400
    assert fixed.json()["workload"]["prefix_tokens"] == [
        "The shared prefix (5,000 tokens) is longer than any prompt (1,024 tokens at most); "
        "it is the start of a prompt."
    ]
    assert unbounded.status_code == 201  # some of its prompts are longer than the prefix
    assert capped.status_code == 400 and "4,096 tokens at most" in str(capped.json())
    assert Selection.objects.count() == 1


def test_a_maximum_context_below_the_longest_request_is_a_400_on_max_context(
    catalog, alice_client, goal_payload
):
    goal_payload["workload"]["max_context"] = 1000
    short = alice_client.post(URL, goal_payload, content_type="application/json")
    goal_payload["workload"]["max_context"] = 1280  # 1,024 in, 256 out
    exact = alice_client.post(URL, goal_payload, content_type="application/json")

    assert short.status_code == 400
    assert short.json()["workload"]["max_context"] == [
        "The maximum context (1,000 tokens) is below the longest request the lengths allow "
        "(1,280 tokens of input and output)."
    ]
    assert exact.status_code == 201


def test_an_end_to_end_target_below_the_ttft_target_is_a_400_on_e2e_ms(
    catalog, alice_client, goal_payload
):
    goal_payload["slo"].update(ttft_ms=1000, e2e_ms=10)

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["slo"]["e2e_ms"] == [
        "The end-to-end target (10 ms) is below the TTFT target (1000 ms); a request's "
        "end-to-end time includes its first token."
    ]
    assert not Selection.objects.exists()


def test_a_target_longer_than_a_day_is_a_400_on_its_field(catalog, alice_client, goal_payload):
    goal_payload["slo"].update(tpot_ms=1e12)

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["slo"]["tpot_ms"] == [
        "At most a day (86,400,000 ms); leave it empty for no target."
    ]
    assert not Selection.objects.exists()


def test_unknown_accelerators_and_prices_are_rejected(catalog, alice_client, goal_payload):
    goal_payload["constraints"]["accelerators"] = ["h100-sxm", "warp-drive"]
    goal_payload["constraints"]["prices"] = {"quantum-9000": 1.0}

    response = _post(alice_client, URL, goal_payload)

    errors = response.json()["constraints"]
    assert list(errors["accelerators"]) == ["1"]
    assert "quantum-9000" in errors["prices"][0]


def test_charlie_of_another_team_cannot_read_or_edit_alices_selection(
    catalog, alice, acme, charlie_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    goal_payload["title"] = "Hijacked"

    assert charlie_client.get(f"{URL}{selection.pk}/").status_code == 404
    assert charlie_client.get(f"{URL}{selection.pk}/candidates/").status_code == 404
    assert (
        charlie_client.put(
            f"{URL}{selection.pk}/", goal_payload, content_type="application/json"
        ).status_code
        == 404
    )
    assert _post(charlie_client, f"{URL}{selection.pk}/candidates/compute/", {}).status_code == 404
    assert charlie_client.get(URL).json()["results"] == []
    selection.refresh_from_db()
    assert selection.title == "Chat assistant"


def test_the_candidate_list_returns_kept_and_dropped_stacks_in_the_documented_shape(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=2)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    assert _post(alice_client, f"{URL}{selection.pk}/candidates/compute/", {}).status_code == 202
    compute_candidates(selection.pk)  # what the Celery worker runs after the commit

    body = alice_client.get(f"{URL}{selection.pk}/candidates/?page_size=5").json()

    leader = body["kept"][0]
    assert set(leader["stack"]) == {
        "engine",
        "engine_version",
        "backend",
        "backends",
        "accelerator",
        "gpu_count",
        "tp",
        "pp",
        "ep",
        "dp",
        "precision",
        "layers",
    }
    assert leader["stack"]["backend"] in leader["stack"]["backends"]
    assert leader["rank"] == 1 and leader["score"] > 0
    assert "goodput_per_gpu_rps" in leader["estimate"]
    assert body["dropped"][0]["reasons"][0].keys() == {"code", "message"}
    assert body["kept_count"] > 5 and len(body["kept"]) == 5
    codes = {group["code"] for group in body["dropped_groups"]}
    assert "hardware_unsupported" in codes


def test_the_candidate_list_says_how_simulated_replicas_read_against_their_analytic_figures(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=2)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    _post(alice_client, f"{URL}{selection.pk}/candidates/compute/", {})
    compute_candidates(selection.pk)

    share = alice_client.get(f"{URL}{selection.pk}/candidates/?page_size=1").json()[
        "simulated_share"
    ]

    kept = selection.candidates.filter(outcome="kept")
    assert kept.filter(estimate__comparison="analytic").exists()
    ratios = sorted(
        row.estimate["goodput_per_gpu_rps"] / row.estimate["analytic_goodput_per_gpu_rps"]
        for row in kept.filter(estimate__comparison="simulated")
    )
    assert (share["low"], share["high"]) == (pytest.approx(ratios[0]), pytest.approx(ratios[-1]))
    assert share["low"] <= share["median"] <= share["high"]
    assert 1 <= share["replicas"] <= len(ratios)


def test_the_candidate_list_filters_by_engine_and_reason_code(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)

    body = alice_client.get(
        f"{URL}{selection.pk}/candidates/?engine=tensorrt-llm&code=hardware_unsupported"
    ).json()

    assert body["kept_count"] > 0 and body["dropped_count"] > 0
    assert {row["stack"]["engine"] for row in body["kept"] + body["dropped"]} == {"tensorrt-llm"}
    assert all(
        "hardware_unsupported" in {r["code"] for r in row["reasons"]} for row in body["dropped"]
    )


def test_the_candidate_list_lists_the_engines_alone_or_only_stacks_with_a_serving_layer(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=kv_short_goal(goal_payload))
    services.candidates_compute(actor_user=alice, selection=selection)

    kept = selection.candidates.filter(outcome="kept")
    alone = [c for c in kept if not c.stack["layers"]]
    assert 0 < len(alone) < kept.count()
    body = alice_client.get(f"{URL}{selection.pk}/candidates/?layers=none&page_size=500").json()
    assert body["kept_count"] == len(alone)
    assert {tuple(row["stack"]["layers"]) for row in body["kept"]} == {()}
    body = alice_client.get(f"{URL}{selection.pk}/candidates/?layers=only").json()
    assert body["kept_count"] == kept.count() - len(alone)
    refused = alice_client.get(f"{URL}{selection.pk}/candidates/?layers=some")
    assert refused.status_code == 400 and "layers" in refused.json()


def test_the_candidate_list_query_count_does_not_grow_with_the_page(
    catalog, alice, acme, alice_client, goal_payload, django_assert_max_num_queries
):
    accelerators = ["h100-sxm", "h200-sxm", "mi300x"]
    goal_payload["constraints"].update(accelerators=accelerators, max_gpus=2)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)

    with django_assert_max_num_queries(12):
        response = alice_client.get(f"{URL}{selection.pk}/candidates/?page_size=500")

    assert len(response.json()["kept"]) > 50


def test_a_viewer_cannot_create_a_selection(catalog, acme, goal_payload):
    from apps.accounts.choices import Role
    from apps.accounts.models import Membership
    from tests.conftest import _user, logged_in

    viewer = _user("victor")
    Membership.objects.create(user=viewer, team=acme, role=Role.VIEWER)

    response = _post(logged_in(viewer), URL, goal_payload)

    assert response.status_code == 403


def test_the_estimate_endpoint_returns_the_estimators_numbers(catalog, alice_client):
    payload = {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "accelerator": "h100-sxm",
        "gpu_count": 2,
        "tp": 2,
        "isl": 2048,
        "osl": 512,
        "concurrency": 16,
        "tpot_ms": 30,
    }

    body = _post(alice_client, "/api/v1/estimate/", payload).json()

    shared = {
        "model": model_arch(ModelSpec.objects.get(slug="llama-3.1-8b")),
        "accel": accelerator_spec(Accelerator.objects.get(slug="h100-sxm")),
        "precision": "bf16",
        "kv_dtype": "bf16",
        "parallelism": Parallelism(tp=2),
        "isl": 2048,
        "osl": 512,
    }
    memory = estimate_memory(**shared)
    latency = estimate_latency(**shared, concurrency=16)
    # 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes.
    assert body["kv_bytes_per_token"] == 131_072
    assert body["weights_gb_per_gpu"] == pytest.approx(memory.weights_gb_per_gpu)
    assert body["weights_gb_per_gpu"] == pytest.approx(8.03 * 2 / 2)
    assert body["kv_capacity_tokens"] == memory.kv_capacity_tokens
    assert body["fits"] is True
    assert body["analytic"]["ttft_ms"] == pytest.approx(latency.ttft_ms)
    assert body["analytic"]["tpot_ms"] == pytest.approx(latency.tpot_ms)
    # A concurrency asks for the simulated steady state: its means answer, with percentiles.
    assert (body["method"], body["nature"]) == ("roofline", "simulated")
    assert body["ttft_ms"] == pytest.approx(body["percentiles"]["ttft_ms"]["mean"])
    assert body["max_concurrency_at_tpot_slo"] == max_concurrency_at_tpot(
        target_tpot_ms=30, **shared
    )


def test_the_estimate_endpoint_names_an_impossible_layout(catalog, alice_client):
    payload = {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "accelerator": "h100-sxm",
        "gpu_count": 3,
        "tp": 2,
        "isl": 128,
        "osl": 128,
    }

    response = _post(alice_client, "/api/v1/estimate/", payload)

    assert response.status_code == 400
    assert "tp" in response.json()


def test_the_schema_documents_the_selection_endpoints(alice_client):
    schema = alice_client.get("/api/schema/?format=json").json()

    assert "/api/v1/selections/{id}/candidates/" in schema["paths"]
    assert "/api/v1/estimate/" in schema["paths"]
    assert "KeptCandidate" in schema["components"]["schemas"]
    compute = schema["paths"]["/api/v1/selections/{id}/candidates/compute/"]["post"]
    assert [code for code in compute["responses"] if code < "300"] == ["202"]
    assert {"400", "401", "403", "404", "429", "503"} <= set(compute["responses"])
    assert "/api/v1/selections/{id}/candidates/status/" in schema["paths"]
    assert "custom_model" in schema["components"]["schemas"]["Workload"]["properties"]


MI300X_STACK = {
    "model": "llama-3.1-70b",
    "precision": "bf16",
    "accelerator": "mi300x",
    "gpu_count": 8,
    "tp": 8,
    "isl": 1024,
    "osl": 256,
}


def test_the_estimate_answers_an_8x_mi300x_stack_with_the_roofline_and_says_so(
    catalog, alice_client
):
    body = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "vllm"}).json()

    assert body["fits"] is True
    assert (body["method"], body["nature"]) == ("roofline", "analytic")
    assert body["method_label"] == "roofline, analytic"
    assert body["engine"] == "vllm" and body["engine_version"]
    assert body["ttft_ms"] > 0 and body["tpot_ms"] > 0
    assert body["e2e_ms"] == pytest.approx(body["ttft_ms"] + 255 * body["tpot_ms"])
    assert body["percentiles"] is None and body["stationary"] is None
    for metric in ("ttft_ms", "tpot_ms"):  # the roofline's band measured on held-out rows
        band = body["error_band"][metric]
        assert band["band"]["p10"] < 0 < band["band"]["p90"], band
        assert band["rows"] > 0 and band["measured_on"] and "held-out" in band["source"]
        # measured on NVIDIA rows only: said, and no measured bound for an AMD stack
        assert band["measured_for"]["vendors"] == ["nvidia"], band
        assert band["covers_stack"] is False
    assert body["error_band"]["e2e_ms"]["band"] is None
    assert "no held-out accuracy" in body["error_band"]["e2e_ms"]["reason"]
    assert "throughput_rps" not in body and "throughput_rps" not in body["error_band"]
    assert body["published"] == [] and body["published_note"]


H200_STACK = {**MI300X_STACK, "precision": "fp8", "accelerator": "h200-sxm", "concurrency": 16}


@pytest.mark.skipif(not aiconfigurator_wheel.AVAILABLE, reason="aiconfigurator-core not here")
def test_the_estimate_answers_an_8x_h200_sglang_stack_from_aiconfigurators_kernel_data(
    catalog, alice_client
):
    sglang = _post(alice_client, "/api/v1/estimate/", {**H200_STACK, "engine": "sglang"}).json()
    lmdeploy = _post(alice_client, "/api/v1/estimate/", {**H200_STACK, "engine": "lmdeploy"})

    assert (sglang["method"], sglang["nature"]) == ("aiconfigurator", "simulated")
    assert sglang["method_label"] == "aiconfigurator, simulated"
    assert "AIConfigurator" in sglang["method_note"] and "sglang" in sglang["method_note"]
    assert sglang["stationary"] is True, sglang["stationarity"]
    for metric in ("ttft", "tpot"):  # the band of AIConfigurator's own held-out errors
        band = sglang["error_band"][f"{metric}_ms"]
        assert band["rows"] == error_band("aiconfigurator", metric).rows
        assert "sglang" in band["measured_for"]["engines"] and band["covers_stack"] is True
    # An engine AIConfigurator does not model falls back to the roofline, and says why.
    other = lmdeploy.json()
    assert other["method"] == "roofline"
    assert "lmdeploy" in other["method_note"] and other["method_note"].startswith("roofline")
    assert other["tpot_ms"] != pytest.approx(sglang["tpot_ms"], rel=0.01)


def test_the_estimate_simulates_a_rate_to_a_stationary_steady_state(catalog, alice_client):
    payload = {**MI300X_STACK, "engine": "sglang", "rate_rps": 2}

    body = _post(alice_client, "/api/v1/estimate/", payload).json()

    assert (body["method"], body["nature"]) == ("roofline", "simulated")
    assert body["stationary"] is True, body["stationarity"]
    assert body["throughput_rps"] == pytest.approx(2, rel=0.15)
    # a simulated throughput says how sure it is: nothing measured its error yet
    throughput_band = body["error_band"]["throughput_rps"]
    assert throughput_band["band"] is None and "no held-out accuracy" in throughput_band["reason"]
    ttft = body["percentiles"]["ttft_ms"]
    assert ttft["p50"] <= ttft["p99"]
    assert body["ttft_ms"] == pytest.approx(ttft["mean"])


def test_a_closed_loop_estimate_also_answers_with_its_clients_started_one_after_another(
    catalog, alice_client
):
    # 16 clients of 1,024-token prompts on a 70B model: together, a round's prompts share steps
    payload = {**MI300X_STACK, "engine": "sglang", "concurrency": 16}

    body = _post(alice_client, "/api/v1/estimate/", payload).json()

    spread = body["spread_start"]
    assert spread["span_s"] == pytest.approx(body["e2e_ms"] / 1e3)
    assert spread["stationary"] is True, spread["stationarity"]
    assert spread["ttft_ms"] < 0.5 * body["ttft_ms"]
    assert spread["ttft_ms"] == pytest.approx(spread["percentiles"]["ttft_ms"]["mean"])
    assert spread["throughput_rps"] == pytest.approx(body["throughput_rps"], rel=0.2)
    assert "16 clients together" in spread["note"] and "between the two" in spread["note"]
    # the same step times as the answer's own figures: the same method, the same bands
    assert spread["method_label"] == body["method_label"] == "roofline, simulated"
    assert spread["error_band"] == body["error_band"]
    assert spread["error_band"]["ttft_ms"]["band"] is not None


@pytest.mark.parametrize(
    "load", [{"rate_rps": 2}, {"concurrency": 1}, {}], ids=["rate", "one-client", "analytic"]
)
def test_an_estimate_without_clients_to_start_apart_has_no_spread_start(
    catalog, alice_client, load
):
    body = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, **load}).json()

    assert "ttft_ms" in body and body["spread_start"] is None


def test_a_simulated_estimate_names_the_budgets_its_engine_starts_with_on_that_gpu(
    catalog, alice_client
):
    stack = {"model": "llama-3.1-8b", "precision": "bf16", "gpu_count": 1, "tp": 1}
    stack |= {"isl": 1024, "osl": 64, "engine": "vllm", "accelerator": "l40s"}
    simulated = {**stack, "concurrency": 8}

    on_l40s = _post(alice_client, "/api/v1/estimate/", simulated).json()
    on_h100 = _post(alice_client, "/api/v1/estimate/", {**simulated, "accelerator": "h100-sxm"})
    analytic = _post(alice_client, "/api/v1/estimate/", stack)

    assert on_l40s["nature"] == "simulated"
    assert on_l40s["scheduler"]["max_num_batched_tokens"] == 2048
    assert "its default on the NVIDIA L40S" in on_l40s["scheduler"]["note"]
    assert on_h100.json()["scheduler"]["max_num_batched_tokens"] == 8192
    assert analytic.status_code == 200 and analytic.json()["nature"] == "analytic"
    assert "scheduler" not in analytic.json()


PIPELINE_STACK = {
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "accelerator": "mi300x",
    "engine": "vllm",
    "isl": 8192,  # long prompts: reading the KV cache is much of a decode step
    "osl": 128,
    "concurrency": 32,
}


def test_a_two_stage_pipeline_estimate_counts_both_micro_batches(catalog, alice_client):
    one = _post(alice_client, "/api/v1/estimate/", {**PIPELINE_STACK, "gpu_count": 1, "tp": 1})
    two = _post(
        alice_client,
        "/api/v1/estimate/",
        {**PIPELINE_STACK, "gpu_count": 2, "tp": 1, "pp": 2, "concurrency": 64},
    )

    one, two = one.json(), two.json()
    assert two["stationary"] is True, two["stationarity"]
    # 64 clients in two micro-batches of 32: each step carries 32 sequences through both half
    # models, about one GPU's step at 32, so twice its throughput. One batch of 64 would read
    # twice the KV cache per step and gain far less.
    assert two["analytic"]["tpot_ms"] == pytest.approx(one["analytic"]["tpot_ms"], rel=0.2)
    assert 1.6 < two["throughput_rps"] / one["throughput_rps"] < 2.4
    assert two["weights_gb_per_gpu"] == pytest.approx(one["weights_gb_per_gpu"] / 2, rel=0.05)


def test_the_estimate_refuses_pipeline_stages_that_do_not_divide_the_gpus(catalog, alice_client):
    payload = {**PIPELINE_STACK, "gpu_count": 2, "tp": 1, "pp": 4}

    response = _post(alice_client, "/api/v1/estimate/", payload)

    assert response.status_code == 400
    assert "tp x pp must divide gpu_count" in response.json()["pp"][0]


def test_the_estimates_load_is_the_whole_deployments_split_evenly_over_its_replicas(
    catalog, alice_client
):
    unloaded = {k: v for k, v in PIPELINE_STACK.items() if k != "concurrency"}
    one_gpu = {**unloaded, "gpu_count": 1, "tp": 1}
    eight = {**one_gpu, "gpu_count": 8}

    closed = [
        _post(alice_client, "/api/v1/estimate/", {**one_gpu, "concurrency": 8}).json(),
        _post(alice_client, "/api/v1/estimate/", {**eight, "concurrency": 64}).json(),
    ]
    opened = [
        _post(alice_client, "/api/v1/estimate/", {**one_gpu, "rate_rps": 2}).json(),
        _post(alice_client, "/api/v1/estimate/", {**eight, "rate_rps": 16}).json(),
    ]

    # 64 clients on 8 one-GPU replicas are 8 on each: one replica's latency, 8 times its output
    for single, deployment in (closed, opened):
        assert deployment["tpot_ms"] == pytest.approx(single["tpot_ms"])
        assert deployment["ttft_ms"] == pytest.approx(single["ttft_ms"])
        assert deployment["throughput_rps"] == pytest.approx(8 * single["throughput_rps"])
    assert closed[1]["per_replica"] == {
        "replicas": 8,
        "gpus": 1,
        "concurrency": 8,
        "rate_rps": None,
    }
    assert opened[1]["per_replica"]["rate_rps"] == pytest.approx(2)
    assert closed[1]["analytic"] == closed[0]["analytic"]
    assert closed[1]["max_concurrency_at_tpot_slo"] is None


def test_clients_that_do_not_split_evenly_are_each_counted_once_in_the_throughput(
    catalog, alice_client
):
    even = {**PIPELINE_STACK, "gpu_count": 2, "tp": 1, "concurrency": 6, "tpot_ms": 50}
    uneven = {**even, "concurrency": 5}

    even, uneven = (_post(alice_client, "/api/v1/estimate/", p).json() for p in (even, uneven))

    # 5 clients on 2 replicas simulate 3 on one; the deployment serves 5 clients' requests
    assert uneven["per_replica"]["concurrency"] == 3
    assert uneven["tpot_ms"] == pytest.approx(even["tpot_ms"])
    assert uneven["throughput_rps"] == pytest.approx(even["throughput_rps"] * 5 / 6)
    assert even["max_concurrency_at_tpot_slo"] % 2 == 0  # every replica's, each the same


def test_an_estimate_for_more_clients_than_the_engine_admits_queues_them_at_a_steady_state(
    catalog, alice_client
):
    payload = {**MI300X_STACK, "model": "llama-3.1-8b", "gpu_count": 1, "tp": 1, "osl": 128}

    answers = [
        _post(alice_client, "/api/v1/estimate/", {**payload, "concurrency": clients}).json()
        for clients in (2048, 4096)
    ]

    assert all(answer["stationary"] for answer in answers), answers
    # the clients past what the replica holds wait their turn: twice the clients, about twice
    # the wait, the same decoding pace and throughput
    fewer, more = answers
    assert 1.6 < more["ttft_ms"] / fewer["ttft_ms"] < 2.4
    assert abs(more["throughput_rps"] - fewer["throughput_rps"]) / fewer["throughput_rps"] < 0.1


def test_a_long_output_workload_at_a_rate_is_simulated_with_its_batch_sharing_the_steps(
    catalog, alice_client
):
    # 1,000 requests of 16,000 output tokens: at a rate the replica decodes many at once, so the
    # run takes far fewer steps than one per token of each request
    payload = {**MI300X_STACK, "model": "llama-3.1-8b", "gpu_count": 1, "tp": 1, "osl": 16_000}

    response = _post(alice_client, "/api/v1/estimate/", {**payload, "rate_rps": 0.1})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["nature"] == "simulated"
    assert body["stationary"] is True, body["stationarity"]
    assert body["throughput_rps"] == pytest.approx(0.1, rel=0.1)


def test_a_load_too_long_to_simulate_is_refused_on_the_output_length(catalog, alice_client):
    # one client at a time: 1,000 requests of 16,000 tokens are 16 million single-sequence steps
    payload = {**MI300X_STACK, "model": "llama-3.1-8b", "gpu_count": 1, "tp": 1, "osl": 16_000}

    response = _post(alice_client, "/api/v1/estimate/", {**payload, "concurrency": 1})

    assert response.status_code == 400
    message = response.json()["osl"][0]
    assert "1,000 requests of 16,000 output tokens" in message
    assert "more than 4,000,000 engine steps" in message


def test_the_estimate_refuses_lengths_past_the_models_context_on_the_field(catalog, alice_client):
    prompt = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "isl": 200_000})
    both = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "isl": 131_000})

    assert prompt.status_code == 400
    assert prompt.json() == {
        "isl": ["The input length exceeds the 131,072-token context of Llama-3.1-70B."]
    }
    assert both.status_code == 400
    assert "Input plus output (131,256 tokens) exceeds" in both.json()["osl"][0]


def test_the_estimate_refuses_an_unknown_engine_with_a_field_error(catalog, alice_client):
    response = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "no-such"})

    assert response.status_code == 400
    assert "engine" in response.json()


def test_the_estimate_refuses_a_sharded_layout_without_an_interconnect_figure_on_the_sharded_field(
    catalog, alice_client
):
    xeon = {**MI300X_STACK, "accelerator": "xeon-8480plus", "model": "llama-3.1-8b"}

    sharded = _post(alice_client, "/api/v1/estimate/", {**xeon, "gpu_count": 2, "tp": 2})
    staged = _post(alice_client, "/api/v1/estimate/", {**xeon, "gpu_count": 2, "tp": 1, "pp": 2})
    replicas = _post(alice_client, "/api/v1/estimate/", {**xeon, "gpu_count": 2, "tp": 1})

    assert sharded.status_code == staged.status_code == 400
    assert list(sharded.json()) == ["tp"] and list(staged.json()) == ["pp"]
    assert sharded.json()["tp"][0].startswith(
        "The catalog has no per-device interconnect bandwidth for Intel Xeon"
    )
    assert "Ask for tp, pp and ep of 1" in staged.json()["pp"][0]
    assert replicas.status_code == 200, replicas.json()


def test_a_prefix_longer_than_a_one_token_prompt_is_told_in_the_singular(catalog, alice_client):
    response = _post(
        alice_client,
        "/api/v1/estimate/",
        {**MI300X_STACK, "isl": 1, "prefix_share": 0.5, "prefix_tokens": 8},
    )

    assert response.status_code == 400
    assert "longer than any prompt (1 token at most)" in response.json()["prefix_tokens"][0]


def test_a_mistyped_catalog_name_or_word_is_answered_with_what_it_likely_meant(
    catalog, alice_client
):
    typed = {"accelerator": "H100", "model": "llama-3-8b", "engine": "VLLM", "precision": "FP8"}

    errors = {
        field: _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, field: value}).json()
        for field, value in typed.items()
    }

    assert errors["accelerator"]["accelerator"] == [
        "No accelerator in the catalog is called 'H100'. Did you mean 'h100-sxm'?"
    ]
    assert errors["model"]["model"][0].endswith("Did you mean 'llama-3.1-8b'?")
    assert errors["engine"]["engine"][0].endswith("Did you mean 'vllm'?")
    precision = errors["precision"]["precision"][0]
    assert precision.startswith("'FP8' is not one of: bf16, fp16, fp8,")
    assert precision.endswith("Did you mean 'fp8'?")


def test_a_goal_with_a_lognormal_too_wide_to_have_a_mean_is_refused_on_sigma(
    catalog, alice_client, goal_payload
):
    goal_payload["workload"]["osl"] = {"kind": "lognormal", "median": 500, "sigma": 50}

    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 400
    assert "must be <= 3.0" in str(response.json()["workload"]["osl"])


@pytest.mark.parametrize(
    "arrival", [{"process": "poisson", "rate_rps": 1e12}, {"concurrency": 10**9}]
)
def test_a_goal_load_past_any_deployment_is_refused(catalog, alice_client, goal_payload, arrival):
    goal_payload["workload"]["arrival"] = arrival

    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 400
    field = next(iter(set(arrival) - {"process"}))
    assert response.json()["workload"]["arrival"][field] == [
        "Ensure this value is less than or equal to 1000000."
    ]


def test_a_goal_names_the_accelerator_a_mistyped_one_likely_meant(
    catalog, alice_client, goal_payload
):
    goal_payload["constraints"]["accelerators"] = ["h100-sxm", "h200"]

    response = _post(alice_client, URL, goal_payload)

    assert response.status_code == 400
    assert response.json()["constraints"]["accelerators"]["1"] == [
        "No accelerator in the catalog is called 'h200', nor any vendor. Did you mean 'h200-sxm'?"
    ]


def test_an_accelerator_the_catalog_lacks_a_figure_for_is_refused_on_the_accelerator(
    catalog, alice_client
):
    payload = {**MI300X_STACK, "model": "llama-3.1-8b", "precision": "q4_k_m", "gpu_count": 1}
    payload |= {"tp": 1, "accelerator": "m4-max-40c", "engine": "llama-cpp"}

    response = _post(alice_client, "/api/v1/estimate/", payload)

    assert response.status_code == 400
    assert response.json() == {
        "accelerator": [
            "bf16_tflops: the catalog has no sourced figure for Apple M4 Max (40-core GPU)"
        ]
    }


def test_the_estimate_refuses_an_orchestrator_as_the_engine(catalog, alice_client):
    response = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "ray-serve-llm"})

    assert response.status_code == 400
    assert "not a serving engine" in str(response.json()["engine"])


def test_the_estimate_refuses_both_a_concurrency_and_a_rate(catalog, alice_client):
    payload = {**MI300X_STACK, "concurrency": 4, "rate_rps": 2}

    response = _post(alice_client, "/api/v1/estimate/", payload)

    assert response.status_code == 400
    assert "rate_rps" in response.json()


def test_the_estimate_refuses_an_unknown_release_and_a_backend_the_engine_lacks(
    catalog, alice_client
):
    version = _post(
        alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "vllm", "engine_version": "0"}
    )
    backend = _post(
        alice_client,
        "/api/v1/estimate/",
        {**MI300X_STACK, "engine": "vllm", "backend": "turbomind"},
    )

    assert version.status_code == 400 and "engine_version" in version.json()
    assert backend.status_code == 400 and "backend" in backend.json()


def test_the_estimate_refuses_a_stack_the_catalog_records_as_unable_to_run(catalog, alice_client):
    tensorrt = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "tensorrt-llm"})
    kernels = _post(
        alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "vllm", "backend": "flashmla"}
    )
    fp4 = {**H200_STACK, "model": "llama-3.1-8b", "precision": "fp4", "gpu_count": 1, "tp": 1}
    hopper_fp4 = _post(alice_client, "/api/v1/estimate/", {**fp4, "engine": "vllm"})
    kv_fp8 = {**fp4, "precision": "bf16", "engine": "llama-cpp", "kv_dtype": "fp8"}
    llama_cpp_fp8_kv = _post(alice_client, "/api/v1/estimate/", kv_fp8)

    # the same reasons the candidate list drops such stacks for, each under the field to change
    assert tensorrt.status_code == 400, tensorrt.json()
    [message] = tensorrt.json()["engine"]
    assert list(tensorrt.json()) == ["engine"]
    assert message.startswith("The catalog records AMD cdna3 as unsupported in TensorRT-LLM")
    assert kernels.status_code == 400
    attention, hardware = kernels.json()["backend"]
    assert "serves mla attention only" in attention and "built for hopper" in hardware
    assert hopper_fp4.status_code == 400
    assert "FP4 tensor cores" in hopper_fp4.json()["precision"][0]
    assert llama_cpp_fp8_kv.status_code == 400
    assert "an FP8 KV cache as unsupported" in llama_cpp_fp8_kv.json()["kv_dtype"][0]
    assert "engine" not in llama_cpp_fp8_kv.json()


def test_an_estimate_names_what_the_catalog_holds_no_evidence_for_beside_its_figures(
    catalog, alice_client
):
    unverified = {**H200_STACK, "model": "llama-3.1-8b", "gpu_count": 1, "tp": 1}
    llama_cpp = _post(alice_client, "/api/v1/estimate/", {**unverified, "engine": "llama-cpp"})
    vllm = _post(alice_client, "/api/v1/estimate/", {**MI300X_STACK, "engine": "vllm"}).json()
    no_engine = _post(alice_client, "/api/v1/estimate/", MI300X_STACK).json()

    assert llama_cpp.status_code == 200
    capability = llama_cpp.json()["capability"]
    assert capability["verdict"] == "unverified"
    assert {reason["code"] for reason in capability["reasons"]} >= {"precision_unverified"}
    assert llama_cpp.json()["tpot_ms"] > 0  # the figures stay, with the gap named beside them
    assert vllm["capability"]["verdict"] == "recorded" and vllm["capability"]["reasons"] == []
    cells = Capability.objects.filter(pk__in=vllm["capability"]["capability_ids"])
    assert {cell.release.engine.slug for cell in cells} == {"vllm"}
    assert {"hw_amd", "tensor_parallel"} <= {cell.feature.key for cell in cells}
    assert no_engine["capability"] is None


def test_two_engines_on_one_layout_get_different_estimates_each_named(catalog, alice_client):
    payload = {**MI300X_STACK, "model": "llama-3.1-8b", "gpu_count": 1, "tp": 1, "concurrency": 8}

    vllm = _post(alice_client, "/api/v1/estimate/", {**payload, "engine": "vllm"}).json()
    tgi = _post(alice_client, "/api/v1/estimate/", {**payload, "engine": "tgi"}).json()

    assert vllm["method_label"] == tgi["method_label"] == "roofline, simulated"
    assert vllm["step_time_basis"] != tgi["step_time_basis"]
    assert vllm["tpot_ms"] != pytest.approx(tgi["tpot_ms"], rel=0.01)


def test_every_figure_of_a_simulated_estimate_names_its_method(catalog, alice_client):
    payload = {**MI300X_STACK, "engine": "sglang", "concurrency": 4, "tpot_ms": 50}
    body = _post(alice_client, "/api/v1/estimate/", payload).json()

    assert body["nature"] == "simulated"
    assert "memory model" in body["memory_method"]
    assert body["analytic"]["method_label"] == "roofline, analytic"
    assert body["max_concurrency_method"] == "roofline, analytic"
    assert body["max_concurrency_at_tpot_slo"] is not None
