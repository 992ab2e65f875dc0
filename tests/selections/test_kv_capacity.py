"""KV capacity against concurrency under each engine's own memory rule."""

from __future__ import annotations

import copy
import math
import re

import pytest

from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections import services
from apps.selections.candidates.capacity import needed_sequences
from apps.selections.candidates.goal import goal_from_documents
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.choices import CandidateOutcome
from apps.selections.estimator import Parallelism, estimate_memory
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


def _long_context_goal(goal_payload, concurrency: int):
    goal_payload["workload"].update(
        model="llama-3.1-70b",
        precision="fp8",
        isl={"kind": "fixed", "value": 7168},
        osl={"kind": "fixed", "value": 1024},
        arrival={"concurrency": concurrency},
        max_context=8192,
    )
    goal_payload["slo"] = {"ttft_ms": 20000, "tpot_ms": 500, "percentile": 99, "attainment": 0.9}
    goal_payload["constraints"].update(accelerators=["h200-sxm"], max_gpus=1)
    return goal_payload


def _compute(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    return services.candidates_compute(actor_user=user, selection=selection)


def _vllm_row(selection):
    return selection.candidates.get(
        outcome=CandidateOutcome.KEPT, stack__engine="vllm", stack__layers=[]
    )


def _sequences(release, kv_dtype: str) -> int:
    memory = estimate_memory(
        model=model_arch(ModelSpec.objects.get(slug="llama-3.1-70b")),
        accel=accelerator_spec(Accelerator.objects.get(slug="h200-sxm")),
        precision="fp8",
        kv_dtype=kv_dtype,
        parallelism=Parallelism(),
        isl=7168,
        osl=1024,
        gpu_memory_utilization=release.memory_fraction,
        memory_basis=release.memory_fraction_basis,
    )
    return memory.max_concurrent_sequences


def test_32_sequences_of_8k_on_one_h200_are_flagged_with_the_number_that_fit_and_fp8_kv(
    catalog, alice, acme, goal_payload
):
    selection = _compute(alice, acme, _long_context_goal(goal_payload, 32))

    row = _vllm_row(selection)
    hint = next(h for h in row.hints if h["code"] == "kv_capacity_short")
    vllm = EngineRelease.objects.get(engine__slug="vllm")
    fit, with_fp8 = _sequences(vllm, "bf16"), _sequences(vllm, "fp8")
    assert 10 < fit < 32 <= with_fp8  # 70.6 GB of FP8 weights leave room for about 19 of 2.7 GB
    assert row.estimate["memory"]["max_concurrent_sequences"] == fit
    assert f"so {fit} sequences of 8,192 tokens fit" in hint["message"]
    assert "keeps 32 in flight (32 concurrent clients)" in hint["message"]
    fp8 = rf"FP8 KV cache \(kv_fp8 stable in vLLM\) would hold {with_fp8} \(enough\)"
    assert re.search(fp8, hint["message"])
    assert "0.92" in row.estimate["memory"]["memory_rule"]


def test_a_shared_prefix_the_engine_caches_is_held_once_when_counting_what_fits(
    catalog, alice, acme, alice_client, goal_payload
):
    def with_prefix(concurrency):
        payload = _long_context_goal(copy.deepcopy(goal_payload), concurrency)
        payload["workload"].update(prefix_share=1.0, prefix_tokens=6144)
        return _vllm_row(_compute(alice, acme, payload))

    vllm = EngineRelease.objects.get(engine__slug="vllm")
    assert _sequences(vllm, "bf16") < 32
    # 32 clients are more than fit as copies, but each needs 2,048 tokens of its own
    assert "kv_capacity_short" not in {hint["code"] for hint in with_prefix(32).hints}
    row = with_prefix(128)
    hint = next(h for h in row.hints if h["code"] == "kv_capacity_short")
    tokens = row.estimate["memory"]["kv_capacity_tokens"]
    held = (tokens - 6144) // (8192 - 6144)
    assert 32 < held < 128
    fits = f"so {held} sequences of 8,192 tokens fit at once, each shared prefix held once"
    assert fits in hint["message"]
    assert row.estimate["memory"]["shared_prefix_sequences"] == held
    # the analytic TTFT computes the rest of each prompt, and the row says so
    assert row.estimate["latency"]["cached_tokens"] == 6144
    page = alice_client.get(f"/selections/{row.selection_id}/candidates/").content.decode()
    assert f"{held} with each shared prefix held once" in page
    assert "a typical prompt reading 6,144 of its tokens from the prefix cache" in page
    uncached = row.selection.candidates.filter(
        outcome=CandidateOutcome.KEPT, stack__engine="lmdeploy"
    )
    assert uncached.exists()
    assert all("cached_tokens" not in c.estimate["latency"] for c in uncached)


def test_a_load_the_kv_cache_holds_is_not_flagged(catalog, alice, acme, goal_payload):
    selection = _compute(alice, acme, _long_context_goal(goal_payload, 8))

    row = _vllm_row(selection)
    assert "kv_capacity_short" not in {h["code"] for h in row.hints}


def test_each_engine_sizes_its_kv_cache_by_its_own_recorded_memory_rule(
    catalog, alice, acme, goal_payload
):
    selection = _compute(alice, acme, _long_context_goal(goal_payload, 8))

    for slug in ("vllm", "tensorrt-llm", "lmdeploy"):
        release = EngineRelease.objects.get(engine__slug=slug)
        rows = selection.candidates.filter(stack__engine=slug).exclude(estimate=None)
        assert rows, slug
        memory = rows[0].estimate["memory"]
        assert memory["memory_fraction"] == release.memory_fraction
        assert memory["memory_basis"] == release.memory_fraction_basis
        assert memory["max_concurrent_sequences"] == _sequences(release, "bf16")
        assert release.memory_fraction_source and release.memory_fraction_as_of
    fractions = {
        slug: EngineRelease.objects.get(engine__slug=slug).memory_fraction
        for slug in ("vllm", "tensorrt-llm", "lmdeploy")
    }
    assert fractions == {"vllm": 0.92, "tensorrt-llm": 0.9, "lmdeploy": 0.8}


def test_an_open_loop_load_counts_sequences_by_rate_and_the_stacks_predicted_time(
    catalog, alice, acme, goal_payload
):
    # a generous end-to-end target (15 minutes) is a bound, not the time a request takes: the
    # load in flight is the rate times the stack's own predicted time (Little's law)
    payload = _long_context_goal(goal_payload, 1)
    payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 1}
    payload["slo"]["e2e_ms"] = 900_000

    selection = _compute(alice, acme, payload)

    row = _vllm_row(selection)
    latency = row.estimate["latency"]
    seconds = (latency["ttft_ms"] + latency["tpot_ms"] * 1023) / 1e3
    needed = math.ceil(seconds)
    held = row.estimate["memory"]["max_concurrent_sequences"]
    assert held < needed < 900  # short of KV at the predicted time, far below the SLO's bound
    hint = next(h for h in row.hints if h["code"] == "kv_capacity_short")
    side = "at least" if needed > latency["concurrency"] else "at most"
    assert (
        f"keeps {needed} in flight (1 req/s x {seconds:.3g} s predicted per request "
        f"(roofline, analytic, at {latency['concurrency']} in flight); "
    ) in hint["message"]
    assert f"so {side} this many)." in hint["message"]
    assert f"would hold {needed}" in hint["message"]


def _two_rps_goal(goal_payload):
    payload = _long_context_goal(goal_payload, 1)
    payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 1, "peak_factor": 2}
    payload["slo"]["e2e_ms"] = 60000
    return goal_from_documents(
        model=ModelSpec.objects.get(slug="llama-3.1-70b"),
        workload=payload["workload"],
        slo=payload["slo"],
        constraints=payload["constraints"],
    )


PREDICTED = {"ttft_ms": 500.0, "tpot_ms": 20.0, "label": "roofline, analytic", "concurrency": 9}


def test_without_a_predicted_time_the_load_is_counted_at_the_time_the_slo_allows(
    catalog, goal_payload
):
    goal = _two_rps_goal(goal_payload)

    assert needed_sequences(goal, None, replicas=1) == (
        120,
        "2 req/s x 60 s allowed per request by the SLO",
    )
    # 0.5 s + 1,023 x 20 ms = 20.96 s at 2 req/s
    assert needed_sequences(goal, PREDICTED, replicas=1)[0] == 42


def test_a_predicted_time_on_a_stack_of_replicas_says_it_holds_at_one_replicas_load(
    catalog, goal_payload
):
    goal = _two_rps_goal(goal_payload)

    alone, how_alone = needed_sequences(goal, PREDICTED, replicas=1)
    spread, how = needed_sequences(goal, PREDICTED, replicas=4)

    assert alone == spread == 42  # the deployment's load, whatever its replicas
    assert "(roofline, analytic, at 9 in flight); more are in flight than that" in how_alone
    assert "(roofline, analytic, at 9 in flight per replica (36 over the 4 replicas)); " in how


@pytest.mark.parametrize(
    ("predicted_at", "words"),
    [
        (9, "; more are in flight than that and each takes longer, so at least this many"),
        (100, "; fewer are in flight than that and each takes less, so at most this many"),
        (42, ")"),
    ],
    ids=["lower-bound", "upper-bound", "at-its-own-load"],
)
def test_a_count_from_a_time_predicted_at_another_load_says_which_way_it_bounds(
    catalog, goal_payload, predicted_at, words
):
    goal = _two_rps_goal(goal_payload)

    needed, how = needed_sequences(goal, {**PREDICTED, "concurrency": predicted_at}, replicas=1)

    assert needed == 42 and how.endswith(words)


def test_an_expert_group_short_of_kv_is_offered_more_whole_groups(
    catalog, alice, acme, goal_payload
):
    payload = _long_context_goal(goal_payload, 160)
    payload["workload"].update(
        model="deepseek-v3",
        isl={"kind": "fixed", "value": 32768},
        osl={"kind": "fixed", "value": 256},
        max_context=33024,
    )
    payload["slo"]["ttft_ms"] = 60000
    payload["constraints"]["max_gpus"] = 8

    selection = _compute(alice, acme, payload)

    rows = [
        row
        for row in selection.candidates.filter(outcome=CandidateOutcome.KEPT)
        if row.stack["ep"] > row.stack["tp"]
    ]
    hints = [h["message"] for row in rows for h in row.hints if h["code"] == "kv_capacity_short"]
    assert hints, "no expert group over data-parallel ranks was short of KV"
    for message in hints:
        units, gpus = map(
            int, re.search(r"(\d+) expert groups of this layout \((\d+) GPUs\)", message).groups()
        )
        assert gpus == 8 * units  # whole groups of eight GPUs, never single replicas


def test_the_memory_fix_says_when_the_peak_rate_needs_more_gpus_than_memory_does(
    catalog, alice, acme, goal_payload
):
    # 4 req/s of 8k-token requests: a few replicas hold the sequences in memory, but each serves
    # far fewer than its share within a 60 ms TPOT, so the row's two GPU counts differ
    payload = _long_context_goal(goal_payload, 1)
    payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 4}
    payload["slo"].update(tpot_ms=60, e2e_ms=900_000)

    selection = _compute(alice, acme, payload)

    row = _vllm_row(selection)
    hint = next(h for h in row.hints if h["code"] == "kv_capacity_short")
    units, gpus = map(
        int, re.search(r"(\d+) replicas of this layout \((\d+) GPUs\)", hint["message"]).groups()
    )
    assert units == gpus < row.estimate["gpus_for_peak"]
    # a wider layout is offered as a fix, but it is past the goal's limit of one GPU per stack
    assert re.search(r"tp\d \(\d GPUs, past the goal's 1-GPU limit\) would hold", hint["message"])
    assert hint["message"].endswith(
        f", but the peak rate needs {row.estimate['gpus_for_peak']} GPUs within the SLO "
        f"({row.estimate['label']})."
    )
