"""Whether a published fixed-concurrency run kept every client's request in the engine's batch.

A source that states the engine's batch per attention rank below its clients per rank ran an
engine that capped its batch, so the other clients' requests waited inside the engine. The
closed loop (stackselect_domain.closedloop) puts every client's request in the batch, so such a
run measured a queue it does not model, and its TTFT and TPOT are not those of that many requests
sharing one batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from stackselect_domain.prompt_load import PromptLoad


def clients_per_rank(concurrency: int | None, dp: int | None) -> int:
    """Attention-DP ranks split the clients, each batching its own share (at least one)."""
    return max(1, -(-(concurrency or 1) // (dp or 1)))


@dataclass(frozen=True)
class EngineBatch:
    """The engine batch per attention rank a run states, beside its clients per rank."""

    batch_size: int
    clients_per_rank: int

    @property
    def holds_clients(self) -> bool:
        return self.batch_size >= self.clients_per_rank

    def note(self) -> str:
        stated = (
            f"the source states an engine batch of {self.batch_size} per rank for "
            f"{self.clients_per_rank} clients per rank"
        )
        if self.holds_clients:
            return stated
        return (
            f"{stated}: the other clients' requests waited inside the engine, a queue no method "
            "here models, so its TTFT and TPOT are not those of every client's request in one "
            "batch; read it with care"
        )


def engine_batch(
    *, batch_size: int | None, concurrency: int | None, dp: int | None
) -> EngineBatch | None:
    """The run's engine batch against its clients, or None where it states no batch or no
    clients."""
    if not batch_size or not concurrency:
        return None
    return EngineBatch(batch_size, clients_per_rank(concurrency, dp))


def loop_reproduces(load: PromptLoad | None, batch: EngineBatch | None) -> bool:
    """Whether the closed loop could reproduce the run: its figures add up from a cold cache
    (stackselect_domain.prompt_load) and its engine batch held its clients; a check that cannot
    tell (None) does not count against it. A calibration fits on such rows only."""
    return not (load and load.beyond_assumed) and not (batch and not batch.holds_clients)
