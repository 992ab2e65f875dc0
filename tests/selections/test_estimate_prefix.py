"""/estimate with a shared prompt prefix: the engine's prefix cache shortens the prompt it
computes and holds the prefix once, and the answer says how many tokens it reads from there."""

from __future__ import annotations

import pytest

from apps.catalog.models import EngineRelease
from tests.selections.helpers import H100_VLLM_ESTIMATE as STACK

pytestmark = pytest.mark.django_db

PREFIX = {"prefix_share": 1.0, "prefix_tokens": 770}


def _estimate(client, payload):
    response = client.post("/api/v1/estimate/", payload, content_type="application/json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_prefix_the_engine_caches_shortens_the_ttft_and_says_how_many_tokens_it_reads(
    catalog, alice_client
):
    plain = _estimate(alice_client, STACK)
    shared = _estimate(alice_client, {**STACK, **PREFIX})
    half = _estimate(alice_client, {**STACK, **PREFIX, "prefix_share": 0.5})

    assert plain["prefix_cache"] is None
    cache = shared["prefix_cache"]
    # vLLM caches whole 16-token blocks: 48 of the 770-token prefix's, every prompt carrying it
    assert cache["held_prefix_tokens"] == 768
    assert cache["cached_tokens_per_prompt"] == 768
    assert half["prefix_cache"]["cached_tokens_per_prompt"] == 384
    assert "vLLM" in cache["note"] and "768" in cache["note"]
    assert "bands were measured on published rows whose prompts share no prefix" in cache["note"]
    assert shared["ttft_ms"] < half["ttft_ms"] < plain["ttft_ms"]
    assert shared["method"] == plain["method"]


def test_a_radix_tree_engine_reads_the_prefix_to_the_token_and_holds_its_whole_blocks(
    catalog, alice_client
):
    prefix = {"prefix_share": 1.0, "prefix_tokens": 780}  # 48 blocks of 16 and 24 of 32, + 12

    vllm = _estimate(alice_client, {**STACK, **prefix})["prefix_cache"]
    trtllm = _estimate(alice_client, {**STACK, **prefix, "engine": "tensorrt-llm"})["prefix_cache"]

    assert (vllm["cached_tokens_per_prompt"], vllm["held_prefix_tokens"]) == (768, 768)
    assert (trtllm["cached_tokens_per_prompt"], trtllm["held_prefix_tokens"]) == (780, 768)
    assert "matches the prefix to the token" in trtllm["note"]
    assert "whole 32-token blocks (768 tokens) once" in trtllm["note"]
    assert "to the token" not in vllm["note"]


def test_a_shared_prefix_held_once_lets_more_clients_meet_the_tpot_target(catalog, alice_client):
    long_prompts = {**STACK, "isl": 16_384, "osl": 512, "tpot_ms": 200}

    plain = _estimate(alice_client, long_prompts)
    shared = _estimate(alice_client, {**long_prompts, "prefix_share": 1.0, "prefix_tokens": 12_288})

    # the KV cache bounds the plain answer; with the prefix held once each sequence needs a
    # quarter of the blocks, and the target is loose enough for the batch that allows
    assert shared["max_concurrency_at_tpot_slo"] > 2 * plain["max_concurrency_at_tpot_slo"]


def test_a_simulated_estimate_serves_the_cached_prefix_from_the_cache(catalog, alice_client):
    load = {"concurrency": 16}

    plain = _estimate(alice_client, {**STACK, **load})
    shared = _estimate(alice_client, {**STACK, **load, **PREFIX})

    assert shared["nature"] == "simulated" and shared["stationary"] is True
    assert shared["ttft_ms"] < plain["ttft_ms"]
    assert shared["percentiles"]["ttft_ms"]["p50"] < plain["percentiles"]["ttft_ms"]["p50"]


def test_without_a_prefix_cache_to_read_every_prompt_is_computed_and_the_answer_says_why(
    catalog, alice_client
):
    lmdeploy = {**STACK, "engine": "lmdeploy"}

    plain = _estimate(alice_client, lmdeploy)
    shared = _estimate(alice_client, {**lmdeploy, **PREFIX})
    unnamed = _estimate(
        alice_client, {key: value for key, value in {**STACK, **PREFIX}.items() if key != "engine"}
    )
    short = _estimate(alice_client, {**STACK, **PREFIX, "prefix_tokens": 10})

    assert shared["ttft_ms"] == pytest.approx(plain["ttft_ms"])
    assert shared["prefix_cache"]["cached_tokens_per_prompt"] == 0
    assert "no prefix cache of LMDeploy" in shared["prefix_cache"]["note"]
    assert "bands" not in shared["prefix_cache"]["note"]  # nothing saved, nothing unmeasured
    assert unnamed["prefix_cache"]["held_prefix_tokens"] == 0
    assert "no engine is named" in unnamed["prefix_cache"]["note"]
    assert short["prefix_cache"]["cached_tokens_per_prompt"] == 0
    assert "shorter than one of vLLM" in short["prefix_cache"]["note"]


def test_a_release_whose_prefix_cache_is_off_by_default_reads_nothing_from_it(
    catalog, alice_client
):
    on = _estimate(alice_client, {**STACK, **PREFIX})
    EngineRelease.objects.filter(engine__slug="vllm").update(prefix_cache_default_on=False)

    off = _estimate(alice_client, {**STACK, **PREFIX})

    assert on["prefix_cache"]["cached_tokens_per_prompt"] == 768
    assert off["prefix_cache"]["cached_tokens_per_prompt"] == 0
    assert off["prefix_cache"]["held_prefix_tokens"] == 0
    assert (
        "only when started with prefix caching on (off by default)" in off["prefix_cache"]["note"]
    )
    assert off["ttft_ms"] > on["ttft_ms"]


def test_a_layout_that_does_not_fit_caches_nothing_and_says_why(catalog, alice_client):
    body = _estimate(
        alice_client,
        {**STACK, **PREFIX, "model": "llama-3.1-70b", "accelerator": "l4", "tpot_ms": 500},
    )

    assert body["fits"] is False
    assert body["prefix_cache"]["cached_tokens_per_prompt"] == 0
    assert body["prefix_cache"]["note"].endswith(f"the layout does not fit ({body['fit_reason']}).")
    assert body["max_concurrency_at_tpot_slo"] == 0  # no client is served on no GPU memory


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"prefix_share": 0.5}, "needs its length"),
        ({"prefix_share": 0.5, "prefix_tokens": 2_000}, "longer than any prompt"),
        ({"prefix_share": 1.5, "prefix_tokens": 100}, "less than or equal to 1"),
    ],
)
def test_the_estimate_refuses_a_prefix_it_cannot_read_on_the_field(
    catalog, alice_client, extra, message
):
    response = alice_client.post(
        "/api/v1/estimate/", {**STACK, **extra}, content_type="application/json"
    )

    assert response.status_code == 400
    errors = response.json()
    field = "prefix_share" if extra["prefix_share"] > 1 else "prefix_tokens"
    assert message in " ".join(errors[field]), errors
