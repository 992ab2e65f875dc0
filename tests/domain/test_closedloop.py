"""The fixed-concurrency closed loop: TTFT and TPOT from any step-time provider."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from stackselect_domain.closedloop import (
    LATER_ROUNDS_REPEAT,
    LATER_ROUNDS_SPREAD,
    SCHEDULE_MIXED,
    SCHEDULE_PREFILL_FIRST,
    predict_fixed_concurrency,
)
from stackselect_domain.steptime import StepBatch


@dataclass(frozen=True)
class LinearSteps:
    """A provider whose step costs 1 ms plus 0.01 ms per prompt token and 0.1 ms per decode."""

    method: str = "linear-test"

    def step_seconds(self, batch: StepBatch) -> float:
        return (1.0 + 0.01 * batch.prefill_tokens + 0.1 * batch.decode_seqs) / 1e3


def test_one_client_waits_one_prefill_step_and_then_one_step_per_token() -> None:
    result = predict_fixed_concurrency(LinearSteps(), isl=100, osl=11, concurrency=1)
    assert result.ttft_ms == pytest.approx(2.0)  # 1 ms + 100 prompt tokens x 0.01 ms
    assert result.tpot_ms == pytest.approx(1.1)  # one decoding sequence per step
    assert (result.method, result.requests) == ("linear-test", 3)


def test_clients_starting_together_queue_for_the_token_budget() -> None:
    args = {"isl": 1000, "osl": 100, "max_batched_tokens": 2000, "lifetimes": 1}
    alone = predict_fixed_concurrency(LinearSteps(), **args, concurrency=1)
    together = predict_fixed_concurrency(LinearSteps(), **args, concurrency=8)
    assert alone.ttft_ms == pytest.approx(11.0)  # 1 ms + 1000 prompt tokens x 0.01 ms
    # eight prompts, two per step's budget (less the decodes riding along): the mean prompt
    # waits for two to three prompt steps and the decodes they carry
    assert together.ttft_ms > 4 * alone.ttft_ms


def test_each_round_is_tallied_and_a_longer_run_amortises_the_first_rounds_queue() -> None:
    args = {"isl": 1000, "osl": 100, "concurrency": 8, "max_batched_tokens": 2000}
    result = predict_fixed_concurrency(LinearSteps(), **args, lifetimes=3)
    first, *later = result.ttft_by_round_ms
    assert len(later) == 2 and first > 2 * later[-1]  # the synchronised start queues once
    assert result.ttft_ms == pytest.approx(sum(result.ttft_by_round_ms) / 3)
    long_run = result.over_rounds(20)
    assert long_run.ttft_ms == pytest.approx((sum(result.ttft_by_round_ms) + 17 * later[-1]) / 20)
    assert result.over_rounds(1).ttft_ms == pytest.approx(first)
    assert long_run.requests == 20 * 8
    with pytest.raises(ValueError, match="rounds"):
        result.over_rounds(0)


@pytest.mark.parametrize(
    ("schedule", "later", "later_ttft_ms"),
    [
        # repeat: the four clients finish together and come back together, every round
        (SCHEDULE_MIXED, LATER_ROUNDS_REPEAT, 41.0),
        # spread: one prompt (1 + 10 ms) with the three other clients' decodes riding (0.3 ms)
        (SCHEDULE_MIXED, LATER_ROUNDS_SPREAD, 11.3),
        # ... and prefill-first, the prompt's step carries no decode
        (SCHEDULE_PREFILL_FIRST, LATER_ROUNDS_SPREAD, 11.0),
    ],
)
def test_later_rounds_repeat_the_first_rounds_pattern_or_spread_the_clients(
    schedule: str, later: str, later_ttft_ms: float
) -> None:
    # four prompts fit one 8,192-token step: started together they share it (1 + 40 ms)
    args = {"isl": 1000, "osl": 100, "concurrency": 4, "lifetimes": 3, "schedule": schedule}
    result = predict_fixed_concurrency(LinearSteps(), **args, later_rounds=later)
    first, *rest = result.ttft_by_round_ms
    assert first == pytest.approx(41.0)
    assert rest == pytest.approx([later_ttft_ms, later_ttft_ms])
    assert result.requests == 12


def test_prefill_first_scheduling_keeps_decodes_out_of_prompt_steps() -> None:
    # a budget of one prompt: the first client's prompt takes the first step (2 ms) alone;
    # mixed, its decode then rides along and takes a token of the second prompt's budget, so
    # that prompt needs two steps (1 + 0.99 + 0.1, then 1 + 0.01 + 0.1 ms): mean (2 + 5.2) / 2;
    # prefill-first, the second prompt gets the whole second step: mean (2 + 4) / 2
    args = {"isl": 100, "osl": 11, "concurrency": 2, "max_batched_tokens": 100, "lifetimes": 1}
    mixed = predict_fixed_concurrency(LinearSteps(), **args, schedule=SCHEDULE_MIXED)
    first = predict_fixed_concurrency(LinearSteps(), **args, schedule=SCHEDULE_PREFILL_FIRST)
    assert mixed.ttft_ms == pytest.approx(3.6)
    assert first.ttft_ms == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"isl": 0}, "isl"),
        ({"concurrency": 0}, "concurrency"),
        ({"max_batched_tokens": 0}, "max_batched_tokens"),
        ({"schedule": "fifo"}, "schedule"),
        ({"lifetimes": 0}, "lifetimes"),
        ({"later_rounds": "random"}, "later_rounds"),
    ],
)
def test_a_bad_argument_is_refused_by_name(arguments: dict, message: str) -> None:
    values = {"isl": 10, "osl": 10, "concurrency": 2, **arguments}
    with pytest.raises(ValueError, match=message):
        predict_fixed_concurrency(LinearSteps(), **values)
