"""Hints that follow the workload, in both directions, each with its numbers."""

from __future__ import annotations

import pytest

from apps.selections import services
from apps.selections.choices import CandidateOutcome
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


def _kept(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    selection = services.candidates_compute(actor_user=user, selection=selection)
    return list(selection.candidates.filter(outcome=CandidateOutcome.KEPT))


def _hints(row, code):
    return [hint["message"] for hint in row.hints if hint["code"] == code]


def _lengths(payload, isl, osl):
    payload["workload"]["isl"] = {"kind": "fixed", "value": isl}
    payload["workload"]["osl"] = {"kind": "fixed", "value": osl}
    payload["workload"]["max_context"] = isl + osl


def test_pd_will_not_pay_for_short_prompts_at_low_load(catalog, alice, acme, goal_payload):
    _lengths(goal_payload, 200, 100)
    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 2}
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=2)

    kept = _kept(alice, acme, goal_payload)

    multi = [row for row in kept if row.stack["gpu_count"] == 2]
    assert multi
    for row in multi:
        (message,) = _hints(row, "pd_will_not_pay")
        assert "200-token prompts and 100-token outputs" in message
        assert "at 2 req/s" in message and "of one replica's time" in message
        assert "ms (roofline, analytic) take" in message  # the quoted prefill names its method
        assert not _hints(row, "pd_disaggregation")


def _long_tight_goal(payload, max_gpus):
    _lengths(payload, 8192, 1024)
    payload["workload"]["model"] = "llama-3.1-70b"
    payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 4}
    payload["slo"] = {"ttft_ms": 3000, "tpot_ms": 40, "percentile": 99, "attainment": 0.9}
    payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=max_gpus)


def test_pd_is_worth_trying_for_long_prompts_and_outputs_with_tight_tails_on_8_gpus(
    catalog, alice, acme, goal_payload
):
    _long_tight_goal(goal_payload, 8)

    kept = _kept(alice, acme, goal_payload)

    eight = [row for row in kept if row.stack["gpu_count"] == 8]
    worth = [m for row in eight for m in _hints(row, "pd_disaggregation")]
    assert worth, [row.hints for row in eight]
    assert "8,192-token prompts and 1,024-token outputs" in worth[0]
    assert "p99 TPOT target of 40 ms" in worth[0] and "these 8 GPUs" in worth[0]


def test_no_pd_hint_either_way_on_one_gpu(catalog, alice, acme, goal_payload):
    _long_tight_goal(goal_payload, 1)
    goal_payload["workload"]["model"] = "llama-3.1-8b"

    kept = _kept(alice, acme, goal_payload)

    assert kept
    codes = {hint["code"] for row in kept for hint in row.hints}
    assert not codes & {"pd_disaggregation", "pd_will_not_pay"}


def _prefix_goal(payload, precision="bf16"):
    payload["workload"].update(precision=precision, prefix_share=0.6, prefix_tokens=1000)
    payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)


def _by_engine(kept):
    rows = {}
    for row in kept:
        rows.setdefault(row.stack["engine"], row)
    return rows


def test_prefix_hints_say_how_each_engine_really_reuses_a_shared_prefix(
    catalog, alice, acme, goal_payload
):
    _prefix_goal(goal_payload)

    rows = _by_engine(_kept(alice, acme, goal_payload))

    (vllm,) = _hints(rows["vllm"], "prefix_reuse")
    assert "blocks of 16 tokens" in vllm and "about 992 of the 1,000 tokens" in vllm
    (sglang,) = _hints(rows["sglang"], "prefix_reuse")
    assert "radix tree" in sglang and "on by default" in sglang
    (lmdeploy,) = _hints(rows["lmdeploy"], "prefix_reuse_opt_in")
    assert "--enable-prefix-caching" in lmdeploy and "off by default" in lmdeploy
    assert not _hints(rows["lmdeploy"], "no_prefix_reuse")


def test_llama_cpp_gets_the_per_slot_cache_hint_not_a_repeat_warning(
    catalog, alice, acme, goal_payload
):
    _prefix_goal(goal_payload, precision="q4_k_m")

    rows = _by_engine(_kept(alice, acme, goal_payload))

    (message,) = _hints(rows["llama-cpp"], "prefix_reuse")
    assert "slot" in message and "--cache-prompt, on by default" in message
    assert "repeats" not in message


def test_no_prefix_hint_without_a_shared_prefix(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    kept = _kept(alice, acme, goal_payload)

    codes = {hint["code"] for row in kept for hint in row.hints}
    assert not codes & {"prefix_reuse", "prefix_reuse_opt_in", "no_prefix_reuse"}


def test_speculative_decoding_is_suggested_when_tpot_binds_and_not_when_it_is_loose(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    goal_payload["slo"].update(tpot_ms=12, ttft_ms=5000)
    goal_payload["slo"].pop("e2e_ms")

    tight = _by_engine(_kept(alice, acme, goal_payload))

    (message,) = _hints(tight["vllm"], "speculative_decoding")
    assert "TPOT binds" in message and "12 ms target" in message
    assert "ms per token (roofline, analytic)" in message  # the quoted figure names its method
    assert "accepts" in message and "stable in vLLM" in message

    goal_payload["slo"].update(tpot_ms=1000)
    goal_payload["title"] = "Loose"
    loose = _kept(alice, acme, goal_payload)
    assert not any(_hints(row, "speculative_decoding") for row in loose)


def test_a_hint_quoting_one_replicas_load_on_a_stack_of_replicas_says_it_is_per_replica(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=2)
    goal_payload["slo"].update(tpot_ms=12, ttft_ms=5000)
    goal_payload["slo"].pop("e2e_ms")

    kept = _kept(alice, acme, goal_payload)
    page = alice_client.get(f"/selections/{kept[0].selection_id}/candidates/").content.decode()

    hinted = [row for row in kept if _hints(row, "speculative_decoding")]
    copies = [row for row in hinted if row.stack["dp"] == 2]
    single = [row for row in hinted if row.stack["dp"] == 1]
    assert copies and single
    for row in copies:
        (message,) = _hints(row, "speculative_decoding")
        in_flight = row.estimate["latency"]["concurrency"]
        worded = f"at {in_flight} in flight per replica ({2 * in_flight} over the 2 replicas)"
        assert f"{worded} the estimate" in message  # the hint words it as the row does
        assert worded in page
    for row in single:
        (message,) = _hints(row, "speculative_decoding")
        assert "per replica" not in message


def test_tensorrt_llm_is_told_it_refuses_prompts_over_its_budget_and_vllm_is_not(
    catalog, alice, acme, goal_payload
):
    # Half the prompts are over TensorRT-LLM's 8,192-token budget, which it refuses without
    # chunked prefill (off by default); vLLM chunks them.
    goal_payload["workload"]["isl"] = {"kind": "lognormal", "median": 8192, "sigma": 0.3}
    goal_payload["workload"]["osl"] = {"kind": "fixed", "value": 64}
    goal_payload["workload"]["max_context"] = 32768
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    kept = _kept(alice, acme, goal_payload)

    engines = {row.stack["engine"]: row for row in kept}
    assert {"tensorrt-llm", "vllm"} <= set(engines)
    (message,) = _hints(engines["tensorrt-llm"], "refused_unchunked")
    share = float(message.split("% of the goal's prompts do")[0].rsplit(" ", 1)[1])
    assert 40 < share < 60, message
    assert "whose prompt exceeds its 8,192-token step budget on the NVIDIA H100 SXM" in message
    assert "Enable chunked prefill or raise the budget" in message
    assert not _hints(engines["vllm"], "refused_unchunked")


def test_no_refusal_hint_when_every_prompt_fits_the_budget(catalog, alice, acme, goal_payload):
    _lengths(goal_payload, 1024, 128)
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    kept = _kept(alice, acme, goal_payload)

    assert any(row.stack["engine"] == "tensorrt-llm" for row in kept)
    assert not any(_hints(row, "refused_unchunked") for row in kept)
