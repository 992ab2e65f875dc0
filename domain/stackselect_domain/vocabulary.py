"""The words a goal, a stack and a job spec are written in, declared once.

Forms, serializers, the estimator and the runner's engine adapters read their choices from
here, so a word accepted in one place is accepted in all (docs/domain.md, "Stack layers").
"""

from __future__ import annotations

from stackselect_domain.precision import KV_DTYPE_BYTES, PRECISIONS

PRECISION_WORDS: tuple[str, ...] = tuple(PRECISIONS)
KV_DTYPES: tuple[str, ...] = tuple(KV_DTYPE_BYTES)
DEFAULT_PRECISION = "bf16"

# Length distributions (workload.parse_length); "replay" replays a trace's rows in order.
LENGTH_KINDS: tuple[str, ...] = ("fixed", "normal", "lognormal", "empirical", "replay")
# Open-loop arrival processes (workload.parse_arrival); a closed loop is given by concurrency.
ARRIVAL_PROCESSES: tuple[str, ...] = ("poisson", "gamma", "constant", "trace")
ATTENTION_KINDS: tuple[str, ...] = ("mha", "gqa", "mla", "sliding")
# Where a run's figures came from: the stack's own engine, or the simulated engine (a dry run).
MODE_MEASURED, MODE_SIMULATED = "measured", "simulated"
RUN_MODES: tuple[str, ...] = (MODE_MEASURED, MODE_SIMULATED)
# How a published measurement loaded the engine: a fixed number of clients, or every request
# queued at once (maximum load).
SCENARIO_FIXED_CONCURRENCY, SCENARIO_MAX_THROUGHPUT = "fixed_concurrency", "max_throughput"
# How a published measurement's GPUs served: one pool (aggregated), or prefill and decode pools.
MODE_AGGREGATED, MODE_DISAGGREGATED = "agg", "disagg"
# Parallel layout axes: tensor, pipeline, expert and data parallel degrees.
PARALLELISM_AXES: tuple[str, ...] = ("tp", "pp", "ep", "dp")


def first_precision(value: object) -> str:
    """The goal's first precision word, whether it was stored as a list or as one string."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        return value[0]
    return DEFAULT_PRECISION
