"""Continuous batching in real time, priced by the step-cost model.

One scheduler task runs engine steps back to back. Each step first gives every decoding
sequence one token, then fills the remaining token budget with prefill chunks (chunked
prefill, oldest first), admitting waiting sequences while fewer than `max_num_seqs` run.

Context conventions (shared with the estimator): a token's context position is the number
of tokens it attends to, itself included (1-based position); a sequence's context length in
a step is its token count after the step's tokens are processed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from stackselect_runner.simengine.stepcost import StepCost

FINISHED = None


@dataclass(eq=False, slots=True)
class Sequence:
    """A request inside the engine; its handler reads one queue item per generated token."""

    prompt_tokens: int
    output_tokens: int
    prefilled: int = 0
    generated: int = 0
    aborted: bool = False
    tokens: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)

    @property
    def decoding(self) -> bool:
        return self.prefilled == self.prompt_tokens

    @property
    def done(self) -> bool:
        return self.aborted or self.generated >= self.output_tokens


@dataclass(slots=True)
class StepPlan:
    decode: list[Sequence] = field(default_factory=list)
    prefill: list[tuple[Sequence, int]] = field(default_factory=list)
    batch_tokens: int = 0
    kv_tokens_read: int = 0
    attn_token_ctx: int = 0

    def add_decode(self, sequence: Sequence) -> None:
        context = sequence.prompt_tokens + sequence.generated
        self.decode.append(sequence)
        self.batch_tokens += 1
        self.kv_tokens_read += context
        self.attn_token_ctx += context

    def add_prefill(self, sequence: Sequence, chunk: int) -> None:
        offset = sequence.prefilled
        self.prefill.append((sequence, chunk))
        self.batch_tokens += chunk
        self.kv_tokens_read += offset + chunk
        self.attn_token_ctx += chunk * offset + chunk * (chunk + 1) // 2


def plan_step(
    running: list[Sequence],
    waiting: deque[Sequence],
    max_num_seqs: int,
    max_num_batched_tokens: int,
) -> StepPlan:
    """Choose the next step's work; admits waiting sequences into `running` as it goes."""
    plan = StepPlan()
    budget = max_num_batched_tokens
    for sequence in running:
        if sequence.decoding and budget > 0:
            plan.add_decode(sequence)
            budget -= 1
    for sequence in running:
        if not sequence.decoding and budget > 0:
            chunk = min(sequence.prompt_tokens - sequence.prefilled, budget)
            plan.add_prefill(sequence, chunk)
            budget -= chunk
    while waiting and budget > 0 and len(running) < max_num_seqs:
        sequence = waiting.popleft()
        running.append(sequence)
        chunk = min(sequence.prompt_tokens, budget)
        plan.add_prefill(sequence, chunk)
        budget -= chunk
    return plan


def apply_step(plan: StepPlan) -> None:
    """Advance the planned sequences and hand each newly generated token to its handler."""
    for sequence in plan.decode:
        sequence.generated += 1
        sequence.tokens.put_nowait(sequence.generated)
    for sequence, chunk in plan.prefill:
        sequence.prefilled += chunk
        if sequence.decoding:
            sequence.generated = 1
            sequence.tokens.put_nowait(1)


class ContinuousBatchingScheduler:
    """Runs steps in real time: a step modelled at d seconds lasts d * time_scale seconds."""

    def __init__(
        self,
        step_cost: StepCost,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        time_scale: float = 1.0,
    ) -> None:
        if max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be >= 1, got {max_num_seqs}")
        if max_num_batched_tokens < max_num_seqs:
            raise ValueError(
                "max_num_batched_tokens must be >= max_num_seqs so every running sequence can "
                f"decode each step, got {max_num_batched_tokens} < {max_num_seqs}"
            )
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        self.step_cost = step_cost
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.time_scale = time_scale
        self.running: list[Sequence] = []
        self.waiting: deque[Sequence] = deque()
        self.steps = 0
        self._wake = asyncio.Event()

    def submit(self, sequence: Sequence) -> None:
        self.waiting.append(sequence)
        self._wake.set()

    def abort_all(self) -> None:
        """Release every handler (used at shutdown so open streams end promptly)."""
        for sequence in [*self.running, *self.waiting]:
            sequence.aborted = True
            sequence.tokens.put_nowait(FINISHED)
        self.running.clear()
        self.waiting.clear()

    def _drop_finished(self) -> None:
        self.running = [sequence for sequence in self.running if not sequence.done]
        if any(sequence.aborted for sequence in self.waiting):
            self.waiting = deque(sequence for sequence in self.waiting if not sequence.aborted)

    async def run(self) -> None:
        """Step forever; steps are chained on modelled deadlines so sleep jitter does not drift."""
        loop = asyncio.get_running_loop()
        previous_end: float | None = None
        while True:
            self._drop_finished()
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                previous_end = None
                continue
            plan = plan_step(
                self.running, self.waiting, self.max_num_seqs, self.max_num_batched_tokens
            )
            duration = self.time_scale * self.step_cost.step_seconds(
                plan.batch_tokens, plan.kv_tokens_read, plan.attn_token_ctx
            )
            now = loop.time()
            start = now if previous_end is None else max(previous_end, now - duration)
            previous_end = start + duration
            await asyncio.sleep(max(previous_end - loop.time(), 0.0))
            apply_step(plan)
            self.steps += 1
