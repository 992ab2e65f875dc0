"""The run `trtllm-bench throughput` made for the TensorRT-LLM performance overview's cells.

The overview states its commands (`trtllm-bench ... throughput --dataset ...`, no batch flags) and
its request counts, but not the batch settings. Given none, trtllm-bench derives them from the
KV cache: the requests the cache holds at ISL + OSL, at most 4,096, shared among the pipeline's
stages, rounded up to a step that grows with the batch (at least 64), and a token budget of that
batch times (1 + ISL / OSL), at most 32,768, rounded likewise (at least 2,048). With chunked
prefill off, its default, the budget is raised to hold one whole prompt beside a full batch.
Source: TensorRT-LLM's `tensorrt_llm/bench/tuning/heuristics.py` (`finetune_setting`, stored
version 0b42ceaf) and `tensorrt_llm/bench/benchmark/utils/general.py` (`get_settings`, stored
version 0171265e), read on 2026-12-05. The overview names no release, so these are the
settings of the versions we read, an assumption for its runs.

Every request is queued at once and the reported figure is output tokens over the whole run,
first request to last (ramp-up and drain included), so a cell is predicted with that many
requests, not with a steady state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BATCH_CAP = 4096
TOKEN_CAP = 32768
MIN_BATCH = 64
MIN_TOKENS = 2048
# (ISL, OSL) -> requests, the overview's "Number of Requests" table.
STATED_REQUESTS = {
    (1024, 1024): 3000,
    (8192, 1024): 1500,
    (1024, 8192): 1500,
    (32768, 1024): 1000,
    (1024, 32768): 1000,
}
# Our assumption: the overview lists no count for its 1000/1000 rows; they are taken to be
# run like the 1024/1024 rows beside them.
ASSUMED_REQUESTS = {(1000, 1000): 3000}


@dataclass(frozen=True)
class BenchSettings:
    """trtllm-bench's limits for one pipeline stage's batch: sequences and tokens per step."""

    max_batch_size: int
    max_num_tokens: int


def _round_up(value: float, step: int) -> int:
    return step * math.ceil(value / step)


def _batch(per_stage: float) -> int:
    if per_stage < 256:
        return max(MIN_BATCH, _round_up(per_stage, 32))
    return _round_up(per_stage, 128 if per_stage < 1024 else 256)


def _tokens(raw: float) -> int:
    if raw < 4096:
        return max(MIN_TOKENS, _round_up(raw, 256))
    return _round_up(raw, 512 if raw < 8192 else 1024)


def bench_settings(*, kv_requests: float, isl: int, osl: int, pp: int) -> BenchSettings:
    """The settings trtllm-bench picks when the command names none.

    kv_requests: requests of ISL + OSL tokens the replica's KV cache holds.
    """
    if kv_requests <= 0 or isl < 1 or osl < 1 or pp < 1:
        raise ValueError("kv_requests, isl, osl and pp: must be positive")
    per_stage = min(kv_requests, BATCH_CAP) / pp
    batch = _batch(per_stage)
    tokens = _tokens(min(per_stage * (1 + isl / osl), TOKEN_CAP))
    return BenchSettings(max_batch_size=batch, max_num_tokens=max(tokens, isl + batch))


def stated_requests(isl: int, osl: int) -> int:
    """Requests the overview ran for a cell's lengths (stated, or our named assumption)."""
    requests = STATED_REQUESTS.get((isl, osl)) or ASSUMED_REQUESTS.get((isl, osl))
    if requests is None:
        raise ValueError(f"isl/osl: the overview states no request count for {isl}/{osl}")
    return requests
