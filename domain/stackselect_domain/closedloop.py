"""TTFT and TPOT at a fixed concurrency, from any step-time provider (closed loop).

This is the condition published tables measure: `concurrency` clients each send a request of
isl prompt tokens for osl output tokens, and send the next one the moment the last finishes.
How many prompts arrive together is the question that sets TTFT. A benchmark client (aiperf,
vLLM's benchmark_serving) starts its clients together, so the first round's prompts queue for the
prefill budget behind each other. What the later rounds do is one of two patterns
(`later_rounds`):

- "repeat": that queue spreads the clients out, and with fixed lengths the later rounds return
  in the same pattern and mostly wait for one step;
- "spread": a real run's timing jitter (a response read a little late, a step a little slower)
  splits clients that arrived together, and with fixed lengths clients that have split never
  arrive together again, so over a long run their arrivals spread across a request's lifetime;
  the later rounds are simulated from the clients spread evenly over it (in at most
  SPREAD_COHORTS groups), and a prompt mostly shares its step with decodes, not other prompts.

The measured mean TTFT is the first round's queue amortised over however many rounds the
benchmark runs: the prediction keeps each simulated round's mean (`ttft_by_round_ms`), and
`over_rounds(n)` weighs them for an n-round run, the rounds past the simulated ones counting as
the last simulated one.

The engine loop is simulated on cohorts (requests in the same state move together) and stretches
of pure decoding are taken in one stride, so a run of several request lifetimes costs a few
hundred provider calls, not one per token per request. Two scheduling policies:

- "mixed" (vLLM, TensorRT-LLM): every step decodes all running sequences and fills the rest of
  the token budget with prompt chunks;
- "prefill_first" (SGLang's default): a step with waiting prompts prefills only them, up to the
  budget; decoding resumes when no prompt waits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from stackselect_domain.steptime import StepBatch, StepTimeProvider

SCHEDULE_MIXED = "mixed"
SCHEDULE_PREFILL_FIRST = "prefill_first"
SCHEDULES = (SCHEDULE_MIXED, SCHEDULE_PREFILL_FIRST)
LATER_ROUNDS_REPEAT = "repeat"
LATER_ROUNDS_SPREAD = "spread"
LATER_ROUNDS = (LATER_ROUNDS_REPEAT, LATER_ROUNDS_SPREAD)
# Most groups the spread pattern keeps its clients in: a prompt rarely shares its step with
# another, and a round costs about a hundred provider calls whatever the concurrency.
SPREAD_COHORTS = 32


@dataclass(frozen=True)
class FixedConcurrencyPrediction:
    """Mean TTFT and TPOT over the measured requests, and the method that timed the steps.

    The per-round means (round r: every client's r-th request) let `over_rounds` say what a
    benchmark of another length would measure without simulating it again.
    """

    ttft_ms: float
    tpot_ms: float
    method: str
    requests: int
    ttft_by_round_ms: tuple[float, ...] = ()
    tpot_by_round_ms: tuple[float, ...] = ()

    def over_rounds(self, rounds: int) -> FixedConcurrencyPrediction:
        """The means a run of `rounds` rounds per client would measure: the simulated rounds as
        simulated, every later one like the last simulated round (the steady pattern)."""
        if rounds < 1:
            raise ValueError("rounds: must be at least 1")
        simulated = len(self.ttft_by_round_ms)
        if not simulated:
            return self

        def weighed(means: tuple[float, ...]) -> float:
            kept = means[:rounds]
            return (sum(kept) + max(0, rounds - simulated) * means[-1]) / rounds

        return replace(
            self,
            ttft_ms=weighed(self.ttft_by_round_ms),
            tpot_ms=weighed(self.tpot_by_round_ms),
            requests=self.requests * rounds // simulated,
        )


@dataclass
class _Waiting:
    count: int
    prefilled: int  # prompt tokens already computed for each request of the cohort
    arrived_s: float
    round: int = 0  # which request of its clients this is (0: the first)


@dataclass
class _Decoding:
    count: int
    generated: int
    first_token_s: float
    arrived_s: float
    round: int = 0


@dataclass
class _Tally:
    ttft_s: float = 0.0
    tpot_s: float = 0.0
    requests: int = 0


class _Loop:
    def __init__(self, provider: StepTimeProvider, isl: int, osl: int, budget: int, schedule: str):
        self.provider, self.isl, self.osl = provider, isl, osl
        self.budget, self.schedule = budget, schedule
        self.now = 0.0
        self.waiting: deque[_Waiting] = deque()
        self.decoding: list[_Decoding] = []

    def context_sum(self, extra: int = 0) -> int:
        return sum(c.count * (self.isl + c.generated + extra) for c in self.decoding)

    def take_prompts(self, budget: int) -> tuple[list[tuple[int, int, int]], list[_Waiting]]:
        """Chunks (requests, tokens each, already prefilled) within the budget, and the
        cohorts whose prompts complete in this step."""
        chunks: list[tuple[int, int, int]] = []
        done: list[_Waiting] = []
        while self.waiting and budget > 0:
            head = self.waiting[0]
            remaining = self.isl - head.prefilled
            whole = min(head.count, budget // remaining)
            if whole:
                chunks.append((whole, remaining, head.prefilled))
                budget -= whole * remaining
                done.append(_Waiting(whole, self.isl, head.arrived_s, head.round))
                head.count -= whole
                if not head.count:
                    self.waiting.popleft()
                continue
            chunks.append((1, budget, head.prefilled))
            head.count -= 1
            partial = _Waiting(1, head.prefilled + budget, head.arrived_s, head.round)
            if not head.count:
                self.waiting.popleft()
            self.waiting.appendleft(partial)
            budget = 0
        return chunks, done

    def step(self) -> list[_Decoding]:
        decode_seqs = sum(c.count for c in self.decoding)
        prefill_only = self.schedule == SCHEDULE_PREFILL_FIRST and self.waiting
        riding = 0 if prefill_only else decode_seqs
        if not self.waiting:
            return self.decode_stride()
        chunks, done = self.take_prompts(max(self.budget - riding, 1))
        prefill = sum(n * tokens for n, tokens, _ in chunks)
        kv = sum(n * (before + tokens) for n, tokens, before in chunks)
        attn = sum(
            n * (tokens * before + tokens * (tokens + 1) // 2) for n, tokens, before in chunks
        )
        contexts = self.context_sum() if riding else 0
        batch = StepBatch(prefill, riding, kv + contexts, attn + contexts)
        self.now += self.provider.step_seconds(batch)
        if riding:
            for cohort in self.decoding:
                cohort.generated += 1
        for cohort in done:
            self.decoding.append(
                _Decoding(cohort.count, 1, self.now, cohort.arrived_s, cohort.round)
            )
        return self.retire()

    def decode_stride(self) -> list[_Decoding]:
        """Decode until the next cohort finishes, timing the stride at its middle context."""
        stride = min(self.osl - c.generated for c in self.decoding)
        seqs = sum(c.count for c in self.decoding)
        contexts = self.context_sum(stride // 2)
        step = self.provider.step_seconds(StepBatch(0, seqs, contexts, contexts))
        self.now += stride * step
        for cohort in self.decoding:
            cohort.generated += stride
        return self.retire()

    def retire(self) -> list[_Decoding]:
        finished = [c for c in self.decoding if c.generated >= self.osl]
        self.decoding = [c for c in self.decoding if c.generated < self.osl]
        for cohort in finished:
            self.waiting.append(_Waiting(cohort.count, 0, self.now, cohort.round + 1))
        return finished


def _spread(loop: _Loop, concurrency: int) -> None:
    """Seed the loop with the clients in up to SPREAD_COHORTS groups whose requests are evenly
    far through their decoding; those seed requests (round -1) are not tallied."""
    groups = min(concurrency, SPREAD_COHORTS)
    size, larger = divmod(concurrency, groups)
    for index in range(groups):
        generated = 1 + index * (loop.osl - 1) // groups
        loop.decoding.append(_Decoding(size + (index < larger), generated, 0.0, 0.0, -1))


def _tally_rounds(loop: _Loop, concurrency: int, count: int) -> list[_Tally]:
    """Run the loop until `count` rounds of every client have finished; round r's tally."""
    rounds = [_Tally() for _ in range(count)]
    while rounds[-1].requests < concurrency:
        for cohort in loop.step():
            if not 0 <= cohort.round < count:
                continue
            tally = rounds[cohort.round]
            tally.requests += cohort.count
            tally.ttft_s += cohort.count * (cohort.first_token_s - cohort.arrived_s)
            decode_s = loop.now - cohort.first_token_s
            tally.tpot_s += cohort.count * decode_s / (loop.osl - 1)
    return rounds


def predict_fixed_concurrency(
    provider: StepTimeProvider,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    max_batched_tokens: int = 8192,
    schedule: str = SCHEDULE_MIXED,
    lifetimes: int = 3,
    later_rounds: str = LATER_ROUNDS_REPEAT,
) -> FixedConcurrencyPrediction:
    """Mean TTFT and TPOT of `concurrency` closed-loop clients over `lifetimes` rounds.

    The clients send their first prompts together at time 0; the rounds after the first follow
    the `later_rounds` pattern (the module's docstring says what each assumes). Every request
    counts, the first round included, as in a benchmark run. Raises ValueError on a bad
    argument.
    """
    for name, value in (
        ("isl", isl),
        ("osl", osl),
        ("concurrency", concurrency),
        ("lifetimes", lifetimes),
    ):
        if value < 1:
            raise ValueError(f"{name}: must be at least 1")
    if max_batched_tokens < 1:
        raise ValueError("max_batched_tokens: must be at least 1")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule: must be one of {', '.join(SCHEDULES)}")
    if later_rounds not in LATER_ROUNDS:
        raise ValueError(f"later_rounds: must be one of {', '.join(LATER_ROUNDS)}")

    def loop() -> _Loop:
        return _Loop(provider, isl, max(osl, 2), max_batched_tokens, schedule)

    together = loop()
    together.waiting.append(_Waiting(concurrency, 0, 0.0))
    if later_rounds == LATER_ROUNDS_REPEAT:
        rounds = _tally_rounds(together, concurrency, lifetimes)
    else:
        rounds = _tally_rounds(together, concurrency, 1)
        if lifetimes > 1:
            spread = loop()
            _spread(spread, concurrency)
            rounds += _tally_rounds(spread, concurrency, lifetimes - 1)
    requests = sum(t.requests for t in rounds)
    return FixedConcurrencyPrediction(
        ttft_ms=sum(t.ttft_s for t in rounds) / requests * 1e3,
        tpot_ms=sum(t.tpot_s for t in rounds) / requests * 1e3,
        method=provider.method,
        requests=requests,
        ttft_by_round_ms=tuple(t.ttft_s / t.requests * 1e3 for t in rounds),
        tpot_by_round_ms=tuple(t.tpot_s / t.requests * 1e3 for t in rounds),
    )
