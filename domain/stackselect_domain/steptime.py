"""One question every latency prediction asks: how long does this engine step take?

The continuous-batching simulator and the steady-state estimate ask it of a provider, so the
same scheduler logic runs on whichever source of step times applies to a stack: the roofline
(every accelerator in the catalog), measured kernel data where a published database covers the
system, engine and version, or factors calibrated on measured runs. Each provider names its
method, and that name travels with every figure computed from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from stackselect_domain.checks import require_int, require_number
from stackselect_domain.stepcost import StepCost

METHOD_ROOFLINE = "roofline"
METHOD_AICONFIGURATOR = "aiconfigurator"
METHOD_CALIBRATED = "calibrated"
# The roofline with efficiency factors fitted on the team's own measured runs: a method of its
# own, because the plain roofline's measured accuracy does not describe it.
METHOD_TEAM_FITTED = "roofline-team-fitted"
METHODS = (METHOD_ROOFLINE, METHOD_AICONFIGURATOR, METHOD_CALIBRATED, METHOD_TEAM_FITTED)

# How a figure was computed from a provider's step times: a discrete-event simulation of the
# engine's scheduler over a request stream, or the closed-form steady state of one typical request.
NATURE_SIMULATED = "simulated"
NATURE_ANALYTIC = "analytic"
NATURES = (NATURE_SIMULATED, NATURE_ANALYTIC)

# (prefill tokens, decode sequences, KV tokens read, attention token-context pairs) -> seconds.
StepFunction = Callable[[float, float, float, float], float]


@dataclass(frozen=True, slots=True)
class StepBatch:
    """What one engine step processes.

    - prefill_tokens: prompt tokens computed in this step (chunks of one or more prompts)
    - decode_seqs: sequences producing one token each
    - kv_tokens_read: sum of the context lengths of every sequence in the batch
    - attn_token_ctx: sum over processed tokens of the context each attends to
    """

    prefill_tokens: int
    decode_seqs: int
    kv_tokens_read: int
    attn_token_ctx: int

    def __post_init__(self) -> None:
        for name in ("prefill_tokens", "decode_seqs", "kv_tokens_read", "attn_token_ctx"):
            require_int(getattr(self, name), f"batch.{name}", 0)

    @property
    def batch_tokens(self) -> int:
        return self.prefill_tokens + self.decode_seqs


@runtime_checkable
class StepTimeProvider(Protocol):
    """Seconds one engine step takes for a batch, and the method that says so."""

    @property
    def method(self) -> str: ...

    def step_seconds(self, batch: StepBatch) -> float: ...


@runtime_checkable
class PlainStepTime(Protocol):
    """A provider that also answers a batch given as plain numbers: the simulator asks once
    per step, and building and checking a StepBatch each time costs a long run a third of its
    time. Fractional numbers (the analytic estimate's averages) are the provider's to round."""

    def seconds(
        self, prefill_tokens: float, decode_seqs: float, kv_tokens_read: float, attn_ctx: float
    ) -> float: ...


@dataclass(frozen=True, slots=True)
class RooflineStepTime:
    """The roofline provider: the step-cost formula the simulated engine also sleeps by.

    An engine that replays decode-only steps as captured CUDA graphs (up to `graph_max_batch`
    sequences) saves `graph_saving_s` of its per-step host overhead on those steps; a step with
    any prefill tokens, or a larger batch, runs eagerly. `engine` names the profile the factors
    came from (empty for the plain formula).
    """

    cost: StepCost
    method: str = METHOD_ROOFLINE
    graph_max_batch: int = 0
    graph_saving_s: float = 0.0
    engine: str = ""

    def __post_init__(self) -> None:
        require_int(self.graph_max_batch, "graph_max_batch", 0)
        saving = require_number(self.graph_saving_s, "graph_saving_s", 0.0)
        if saving > self.cost.step_overhead_s:
            raise ValueError("graph_saving_s must not exceed the step cost's step_overhead_s")

    def seconds(
        self, prefill_tokens: float, decode_seqs: float, kv_tokens_read: float, attn_ctx: float
    ) -> float:
        """The step time of a batch given as plain numbers (the analytic estimate's averages
        are fractional; the simulator calls this once per step, so it builds no StepBatch)."""
        seconds = self.cost.step_seconds(prefill_tokens + decode_seqs, kv_tokens_read, attn_ctx)
        if prefill_tokens == 0 and 0 < decode_seqs <= self.graph_max_batch:
            seconds -= self.graph_saving_s
        return seconds

    def step_seconds(self, batch: StepBatch) -> float:
        return self.seconds(
            batch.prefill_tokens, batch.decode_seqs, batch.kv_tokens_read, batch.attn_token_ctx
        )


def step_function(provider: StepTimeProvider) -> StepFunction:
    """The provider's step time as a function of plain numbers.

    A `PlainStepTime` answers directly (the roofline takes fractional averages;
    AIConfigurator's rounds them to whole tokens itself); any other is asked through the
    protocol with the batch rounded to whole tokens.
    """
    if isinstance(provider, PlainStepTime):
        return provider.seconds

    def seconds(prefill: float, decode: float, kv_read: float, attn: float) -> float:
        batch = StepBatch(round(prefill), round(decode), round(kv_read), round(attn))
        return provider.step_seconds(batch)

    return seconds
