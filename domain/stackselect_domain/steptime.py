"""One question every latency prediction asks: how long does this engine step take?

The continuous-batching simulator and the steady-state estimate ask it of a provider, so the
same scheduler logic runs on whichever source of step times applies to a stack: the roofline
(every accelerator in the catalog), measured kernel data where a published database covers the
system, engine and version, or factors calibrated on measured runs. Each provider names its
method, and that name travels with every figure computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from stackselect_domain.checks import require_int
from stackselect_domain.stepcost import StepCost

METHOD_ROOFLINE = "roofline"
METHOD_AICONFIGURATOR = "aiconfigurator"
METHOD_CALIBRATED = "calibrated"
METHODS = (METHOD_ROOFLINE, METHOD_AICONFIGURATOR, METHOD_CALIBRATED)


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


@dataclass(frozen=True, slots=True)
class RooflineStepTime:
    """The roofline provider: the step-cost formula the simulated engine also sleeps by."""

    cost: StepCost
    method: str = METHOD_ROOFLINE

    def step_seconds(self, batch: StepBatch) -> float:
        return self.cost.step_seconds(
            batch.batch_tokens, batch.kv_tokens_read, batch.attn_token_ctx
        )
