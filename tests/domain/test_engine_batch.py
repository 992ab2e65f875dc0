"""Whether a published run kept every client's request in its engine's batch, and whether the
closed loop could reproduce it at all."""

from __future__ import annotations

import pytest
from stackselect_domain.engine_batch import (
    EngineBatch,
    clients_per_rank,
    engine_batch,
    loop_reproduces,
)
from stackselect_domain.prompt_load import ROOFLINE_GEMM_SHARE, PromptLoad


@pytest.mark.parametrize(
    ("concurrency", "dp", "expected"),
    [(16, None, 16), (16, 1, 16), (16, 4, 4), (17, 4, 5), (2, 8, 1), (None, None, 1)],
)
def test_clients_split_over_the_attention_ranks_rounding_up(concurrency, dp, expected) -> None:
    assert clients_per_rank(concurrency, dp) == expected


def test_a_batch_at_least_the_clients_per_rank_holds_them() -> None:
    assert engine_batch(batch_size=16, concurrency=16, dp=None).holds_clients
    assert engine_batch(batch_size=4, concurrency=16, dp=4).holds_clients
    assert engine_batch(batch_size=32, concurrency=32, dp=64).holds_clients


def test_a_batch_below_the_clients_per_rank_says_the_others_queued_inside_the_engine() -> None:
    batch = engine_batch(batch_size=4, concurrency=16, dp=1)

    assert batch == EngineBatch(batch_size=4, clients_per_rank=16)
    assert not batch.holds_clients
    assert "batch of 4 per rank for 16 clients per rank" in batch.note()
    assert "waited inside the engine" in batch.note()
    assert "waited" not in engine_batch(batch_size=16, concurrency=16, dp=1).note()


@pytest.mark.parametrize(("batch_size", "concurrency"), [(None, 16), (0, 16), (16, None)])
def test_a_run_stating_no_batch_or_no_clients_cannot_tell(batch_size, concurrency) -> None:
    assert engine_batch(batch_size=batch_size, concurrency=concurrency, dp=None) is None


FITS = PromptLoad(share_of_peak=ROOFLINE_GEMM_SHARE / 2)
TOO_FAST = PromptLoad(share_of_peak=ROOFLINE_GEMM_SHARE * 2)
HOLDS = EngineBatch(batch_size=16, clients_per_rank=16)
CAPPED = EngineBatch(batch_size=4, clients_per_rank=16)


@pytest.mark.parametrize(
    ("load", "batch", "expected"),
    [
        (FITS, HOLDS, True),
        (None, None, True),
        (TOO_FAST, HOLDS, False),
        (FITS, CAPPED, False),
        (None, CAPPED, False),
        (TOO_FAST, None, False),
    ],
)
def test_the_loop_reproduces_a_run_only_when_neither_check_finds_against_it(
    load, batch, expected
) -> None:
    assert loop_reproduces(load, batch) is expected
