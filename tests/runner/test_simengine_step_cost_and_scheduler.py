"""The step-cost formula and continuous-batching step planning, with hand-computed numbers."""

from __future__ import annotations

from collections import deque

import pytest
from stackselect_runner.simengine import DEFAULT_STEP_COST, StepCost
from stackselect_runner.simengine.scheduler import Sequence, apply_step, plan_step

COST = {
    "weight_bytes": 1e9,
    "kv_bytes_per_token": 1e5,
    "flops_per_token": 2e9,
    "attn_flops_per_token_ctx": 1e5,
    "hbm_bytes_per_s": 1e12,
    "flops_per_s": 1e14,
    "comm_s_per_token": 1e-6,
    "step_overhead_s": 1e-3,
}


def test_a_compute_bound_step_costs_overhead_plus_flops_plus_communication() -> None:
    # compute (100*2e9 + 5e5*1e5) / 1e14 = 2.5 ms beats memory (1e9 + 1e4*1e5) / 1e12 = 2 ms
    seconds = StepCost.from_dict(COST).step_seconds(100, 10_000, 500_000)
    assert seconds == pytest.approx(1e-3 + 2.5e-3 + 100 * 1e-6)


def test_a_memory_bound_step_costs_the_weight_and_kv_reads() -> None:
    # memory (1e9 + 1e5*1e5) / 1e12 = 11 ms; compute (2*2e9 + 0) / 1e14 = 0.04 ms
    seconds = StepCost.from_dict(COST).step_seconds(2, 100_000, 0)
    assert seconds == pytest.approx(1e-3 + 11e-3 + 2e-6)


def test_the_default_decode_step_is_the_8b_weight_read_on_h100_plus_overhead() -> None:
    # 8.03e9 params * 2 bytes / 3.35e12 B/s = 4.794 ms, plus 2 ms overhead
    assert DEFAULT_STEP_COST.step_seconds(1, 1, 1) == pytest.approx(6.794e-3, rel=1e-3)


def test_a_step_cost_missing_a_field_is_rejected_naming_it() -> None:
    partial = {key: value for key, value in COST.items() if key != "flops_per_s"}
    with pytest.raises(ValueError, match="flops_per_s"):
        StepCost.from_dict(partial)


def test_a_zero_bandwidth_is_rejected() -> None:
    with pytest.raises(ValueError, match="hbm_bytes_per_s"):
        StepCost.from_dict({**COST, "hbm_bytes_per_s": 0})


def test_step_cost_json_round_trips_inline() -> None:
    import json

    assert StepCost.from_json_or_file(json.dumps(COST)).as_dict() == COST


def test_a_step_decodes_running_sequences_then_fills_the_budget_with_a_prefill_chunk() -> None:
    decoding_a = Sequence(prompt_tokens=8, output_tokens=10, prefilled=8, generated=2)
    decoding_b = Sequence(prompt_tokens=18, output_tokens=10, prefilled=18, generated=2)
    newcomer = Sequence(prompt_tokens=5, output_tokens=3)
    running = [decoding_a, decoding_b]
    plan = plan_step(running, deque([newcomer]), max_num_seqs=4, max_num_batched_tokens=6)
    assert plan.batch_tokens == 2 + 4
    # contexts after the step: 8+2=10 and 18+2=20 for the decodes, 4 for the chunk
    assert plan.kv_tokens_read == 10 + 20 + 4
    # decode tokens sit at positions 10 and 20; the chunk's tokens at 1, 2, 3, 4
    assert plan.attn_token_ctx == 10 + 20 + (1 + 2 + 3 + 4)
    assert running == [decoding_a, decoding_b, newcomer]


def test_a_chunked_prefill_finishes_in_a_later_step_and_then_emits_the_first_token() -> None:
    sequence = Sequence(prompt_tokens=10, output_tokens=3)
    running: list[Sequence] = []
    waiting = deque([sequence])
    first = plan_step(running, waiting, max_num_seqs=2, max_num_batched_tokens=6)
    apply_step(first)
    assert (sequence.prefilled, sequence.generated, sequence.tokens.qsize()) == (6, 0, 0)
    second = plan_step(running, waiting, max_num_seqs=2, max_num_batched_tokens=6)
    assert second.attn_token_ctx == 7 + 8 + 9 + 10
    assert second.kv_tokens_read == 10
    apply_step(second)
    assert (sequence.prefilled, sequence.generated, sequence.tokens.qsize()) == (10, 1, 1)


def test_waiting_sequences_stay_queued_while_max_num_seqs_are_running() -> None:
    running = [Sequence(prompt_tokens=4, output_tokens=9, prefilled=4, generated=1)]
    waiting = deque([Sequence(prompt_tokens=4, output_tokens=2)])
    plan = plan_step(running, waiting, max_num_seqs=1, max_num_batched_tokens=100)
    assert plan.batch_tokens == 1
    assert len(waiting) == 1
