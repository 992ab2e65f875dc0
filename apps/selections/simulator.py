"""Request-level discrete-event simulation of one replica's continuous-batching scheduler.

The scheduler follows vLLM's unified (V1-style) loop: every step first gives each decoding
sequence one token, then continues partial prefills, then admits waiting requests in arrival
order, all within a token budget. KV memory is counted in blocks; when a running sequence needs a
block and none is free, the newest running sequence is preempted and later recomputed. A step
lasts what the replica's step-time provider (stackselect_domain.steptime) says for the batch it
processes: the roofline, or any other provider that covers the stack.

Prefix caching is simplified: a prefix group counts as cached once any request has computed its
prefix, and stays cached (no eviction). A hit skips the compute of the prefix's whole blocks, but
the request still holds its own blocks for them: the memory saved by sharing is not modelled.
Requests longer (prompt + output) than the KV cache, or without chunked prefill longer than the
token budget (prompt + output as vLLM counts it, or the prompt alone as TensorRT-LLM does), are
rejected on arrival, as an engine refuses them.

Decoding sequences are not visited one by one per step: each keeps its start step, and two heaps
hold the steps at which it needs its next KV block and at which it finishes. A run costs about
O(steps + requests * (1 + tokens / block size) * log n), so 10,000 requests take seconds.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from stackselect_domain.slo import SLO, SLOVerdict, judge
from stackselect_domain.stepcost import StepCost
from stackselect_domain.steptime import RooflineStepTime, StepTimeProvider, step_function
from stackselect_domain.workload import Request

FINISHED = "finished"
REJECTED = "rejected"
UNFINISHED = "unfinished"

_WAITING, _PREFILLING, _DECODING, _DONE = range(4)

StepTimes = StepTimeProvider | StepCost


class SimulationTooLong(Exception):
    """A run that needs more engine steps than its caller allows: long outputs at a light load
    take a step per token of each request, and a caller answering at once cannot wait for them."""

    def __init__(self, max_steps: int) -> None:
        super().__init__(f"the run needs more than {max_steps:,} engine steps")
        self.max_steps = max_steps


def as_provider(step_time: StepTimes) -> StepTimeProvider:
    """A bare StepCost (the simulated engine's wire format) is the plain roofline provider."""
    return RooflineStepTime(step_time) if isinstance(step_time, StepCost) else step_time


@dataclass(frozen=True)
class EngineConfig:
    """Scheduler budgets of one replica, named after vLLM's options.

    kv_capacity_tokens usually comes from estimator.estimate_memory().kv_capacity_tokens.
    """

    max_num_batched_tokens: int
    max_num_seqs: int
    kv_capacity_tokens: int
    kv_block_size: int = 16
    chunked_prefill: bool = True
    prefix_caching: bool = True
    # A cached prefix is read to the token (a radix tree matching token by token, or its
    # partly filled last block copied), not in whole blocks only (vLLM's hashed blocks); the
    # cache holds its whole blocks either way.
    partial_prefix_reuse: bool = False
    # Without chunked prefill, what must fit in one step's budget: the prompt alone
    # (TensorRT-LLM refuses a longer prompt) or, by default, prompt and output (vLLM's rule).
    unchunked_prompt_only: bool = False

    def __post_init__(self) -> None:
        for name in ("max_num_batched_tokens", "max_num_seqs", "kv_block_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            # vLLM enforces the same, so every running sequence can decode in every step.
            raise ValueError("max_num_batched_tokens: must be >= max_num_seqs")
        if self.kv_capacity_tokens < self.kv_block_size:
            raise ValueError("kv_capacity_tokens: must hold at least one block")

    @property
    def total_blocks(self) -> int:
        return self.kv_capacity_tokens // self.kv_block_size

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.kv_block_size)


def reusable_tokens(config: EngineConfig, matched: int) -> int:
    """Of `matched` prefix tokens, those the engine reads from its cache: all of them where it
    reuses to the token, else its whole blocks."""
    if config.partial_prefix_reuse:
        return matched
    return matched - matched % config.kv_block_size


@dataclass(frozen=True)
class RequestOutcome:
    """What happened to one request. Times in seconds from the start; latencies in ms.

    tpot_ms = (e2e - ttft) / (output_tokens - 1); None for single-token outputs.
    Rejected requests could never fit (KV capacity, or the batch budget without chunked prefill).
    """

    index: int
    status: str
    input_tokens: int
    output_tokens: int
    arrival_s: float | None
    first_token_s: float | None
    finish_s: float | None
    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    preemptions: int


@dataclass(frozen=True)
class Percentiles:
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles | None:
        if not values:
            return None
        p50, p90, p95, p99 = np.percentile(values, [50, 90, 95, 99])
        return cls(float(np.mean(values)), float(p50), float(p90), float(p95), float(p99))


@dataclass(frozen=True)
class SimSummary:
    """Run-level figures. Percentiles cover finished requests; the SLO fields are None without
    an SLO. Duration runs from the first arrival to the last finish."""

    requests: int
    finished: int
    rejected: int
    unfinished: int
    duration_s: float
    throughput_rps: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    preemptions: int
    prefix_hit_tokens: int
    steps: int
    mean_batch_tokens: float
    ttft_ms: Percentiles | None
    tpot_ms: Percentiles | None
    e2e_ms: Percentiles | None
    attainment: float | None
    goodput_rps: float | None
    percentiles_within_slo: bool | None
    slo_met: bool | None
    slo_verdict: SLOVerdict | None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SimResult:
    rows: list[RequestOutcome]
    summary: SimSummary

    def as_dict(self) -> dict:
        return {"summary": self.summary.as_dict(), "requests": [asdict(row) for row in self.rows]}


class _Seq:
    """Mutable scheduler state of one request."""

    __slots__ = (
        "arrival_s",
        "blocks",
        "decode_base_computed",
        "decode_base_generated",
        "decode_start",
        "epoch",
        "finish_step",
        "first_token_s",
        "generated",
        "num_computed",
        "num_known",
        "order",
        "preemptions",
        "request",
        "shared",
        "state",
    )

    def __init__(self, request: Request, arrival_s: float) -> None:
        self.request = request
        self.arrival_s = arrival_s
        self.state = _WAITING
        self.num_known = request.input_tokens  # tokens whose KV must exist before sampling
        self.num_computed = 0
        self.generated = 0
        self.blocks = 0  # blocks of its own
        self.shared = 0  # blocks of its group's cached prefix it reads, held by the group
        self.order = -1
        self.epoch = 0
        self.preemptions = 0
        self.first_token_s: float | None = None
        self.decode_start = self.decode_base_computed = self.decode_base_generated = 0
        self.finish_step = 0


class _Engine:
    def __init__(
        self,
        requests: Sequence[Request],
        step_time: StepTimeProvider,
        config: EngineConfig,
        max_sim_seconds: float | None,
        concurrency: int | None,
        max_steps: int | None = None,
        spread_start_s: float | None = None,
    ) -> None:
        self.seconds = step_function(step_time)
        self.config = config
        self.max_sim_seconds = max_sim_seconds
        self.max_steps = max_steps
        self.closed_loop = concurrency is not None
        self.pending = deque(
            requests if self.closed_loop else sorted(requests, key=lambda r: (r.arrival_s, r.index))
        )
        self.clock = 0.0
        self.step_index = 0
        self.free_blocks = config.total_blocks
        self.waiting: deque[_Seq] = deque()
        self.running: OrderedDict[int, _Seq] = OrderedDict()  # admission order, newest last
        self.prefilling: list[_Seq] = []
        self.decoders = 0
        self.decoder_computed = 0  # sum of num_computed over decoding sequences
        self.block_events: list[tuple[int, int, int, _Seq]] = []
        self.finish_events: list[tuple[int, int, int, _Seq]] = []
        self.next_order = 0
        self.cached_groups: set[int] = set()
        # A cached prefix's blocks are held once for its group (engines share them by reference)
        # and kept while any sequence reads them; an unread one is evicted, least recently used
        # first, when blocks run short.
        self.group_blocks: OrderedDict[int, int] = OrderedDict()
        self.group_readers: dict[int, int] = {}
        self.prefix_hit_tokens = 0
        self.batch_tokens = 0
        self.outcomes: dict[int, RequestOutcome] = {}
        self.in_flight: list[_Seq] = []
        clients = concurrency or 0
        # a spread start: client i sends its first request at i / clients of the span
        span = spread_start_s or 0.0
        self.starts = deque(span * i / clients for i in range(1, clients)) if span else deque()
        self._fill_clients(clients - len(self.starts))

    # ------------------------------------------------------------ main loop

    def run(self) -> list[RequestOutcome]:
        while True:
            if not self.closed_loop:
                while self.pending and self.pending[0].arrival_s <= self.clock:
                    request = self.pending.popleft()
                    self._arrive(request, request.arrival_s)
            while self.starts and self.starts[0] <= self.clock:
                self._fill_clients(1, at=self.starts.popleft())
            if self.running or self.waiting:
                if self.waiting or self.prefilling:
                    self._step()
                else:
                    self._decode_steps()
                if self.max_steps is not None and self.step_index > self.max_steps:
                    raise SimulationTooLong(self.max_steps)
            elif self.starts:
                self.clock = self.starts[0]
            elif self.closed_loop or not self.pending:
                break
            else:
                self.clock = self.pending[0].arrival_s
            if self.max_sim_seconds is not None and self.clock >= self.max_sim_seconds:
                break
        return self._rows()

    def _arrive(self, request: Request, arrival_s: float) -> bool:
        """Queue a request, or reject it when it could never fit; True when queued."""
        total = request.input_tokens + request.output_tokens
        unchunked = request.input_tokens if self.config.unchunked_prompt_only else total
        too_long = (
            not self.config.chunked_prefill and unchunked > self.config.max_num_batched_tokens
        )
        if too_long or self.config.blocks_for(total) > self.config.total_blocks:
            self._record(request, REJECTED, arrival_s, preemptions=0)
            return False
        seq = _Seq(request, arrival_s)
        self.in_flight.append(seq)
        self.waiting.append(seq)
        return True

    def _fill_clients(self, clients: int, at: float | None = None) -> None:
        """Closed loop: the given number of idle clients each send their next request now (or
        at `at`, a spread start's moment, which the step under way may have passed)."""
        while clients and self.closed_loop and self.pending:
            if self._arrive(self.pending.popleft(), self.clock if at is None else at):
                clients -= 1

    # ------------------------------------------------------------ one step

    def _step(self) -> None:
        step = self.step_index
        self._grow_decoders(step)
        chunks: list[tuple[_Seq, int]] = []
        budget = self._continue_prefills(self.config.max_num_batched_tokens - self.decoders, chunks)
        self._admit_waiting(budget, chunks)
        decoders = self.decoders
        tokens = decoders
        kv_read = attn = self.decoder_computed + decoders
        for seq, chunk in chunks:
            start, end = seq.num_computed, seq.num_computed + chunk
            tokens += chunk
            kv_read += end
            attn += (end * (end + 1) - start * (start + 1)) // 2
        if tokens == 0:
            raise RuntimeError("scheduler made no progress")  # would be a bug, not bad input
        self.clock += self.seconds(tokens - decoders, decoders, kv_read, attn)
        self.batch_tokens += tokens
        self.decoder_computed += decoders
        for seq, chunk in chunks:
            self._after_chunk(seq, chunk, step)
        self._retire_decoders(step)
        self.step_index += 1

    def _decode_steps(self) -> None:
        """Steps of decoders alone, each as `_step` takes it, until a request waits, arrives or
        a limit is reached: most of a long run's steps are such, and scheduling each found
        nothing to schedule. A decoder due for a KV block when fewer blocks are free than there
        are decoders may preempt, so that step is left to `_step` and its rules."""
        seconds = self.seconds
        next_arrival = self.pending[0].arrival_s if self.pending and not self.closed_loop else None
        if self.starts and (next_arrival is None or self.starts[0] < next_arrival):
            next_arrival = self.starts[0]
        while True:
            step, decoders = self.step_index, self.decoders
            block_due = bool(self.block_events) and self.block_events[0][0] <= step
            if block_due and self.free_blocks < decoders:
                self._step()
                return
            if block_due:
                self._grow_decoders(step)
            context = self.decoder_computed + decoders
            self.clock += seconds(0, decoders, context, context)
            self.batch_tokens += decoders
            self.decoder_computed += decoders
            self._retire_decoders(step)
            self.step_index = step + 1
            if self.waiting or not self.decoders:
                return
            if self.max_steps is not None and self.step_index > self.max_steps:
                return
            if next_arrival is not None and next_arrival <= self.clock:
                return
            if self.max_sim_seconds is not None and self.clock >= self.max_sim_seconds:
                return

    def _grow_decoders(self, step: int) -> None:
        """Give each decoder due for a new KV block this step its block, preempting if needed."""
        block_size = self.config.kv_block_size
        while self.block_events and self.block_events[0][0] <= step:
            due, _, epoch, seq = heapq.heappop(self.block_events)
            if seq.epoch != epoch or seq.state != _DECODING:
                continue
            if self._reserve_blocks(seq, 1, step) and due + block_size <= seq.finish_step:
                heapq.heappush(self.block_events, (due + block_size, seq.order, epoch, seq))

    def _continue_prefills(self, budget: int, chunks: list[tuple[_Seq, int]]) -> int:
        for seq in list(self.prefilling):
            if budget <= 0:
                break
            if seq.state != _PREFILLING:
                continue  # preempted for an older sequence earlier in this loop
            chunk = min(seq.num_known - seq.num_computed, budget)
            extra = self.config.blocks_for(seq.num_computed + chunk) - seq.blocks - seq.shared
            if not self._reserve_blocks(seq, extra, self.step_index):
                break  # it was the newest running sequence, so nothing after it runs either
            chunks.append((seq, chunk))
            budget -= chunk
        return budget

    def _admit_waiting(self, budget: int, chunks: list[tuple[_Seq, int]]) -> None:
        config = self.config
        while self.waiting and budget > 0 and len(self.running) < config.max_num_seqs:
            seq = self.waiting[0]
            cached = self._prefix_hit(seq)
            need = seq.num_known - cached
            chunk = min(need, budget)
            if chunk < need and not config.chunked_prefill:
                break
            shared = cached // config.kv_block_size
            blocks = config.blocks_for(cached + chunk) - shared
            while blocks > self.free_blocks and self._evict_unread(keep=seq.request.prefix_group):
                pass
            if blocks > self.free_blocks:
                break
            self.waiting.popleft()
            self.prefix_hit_tokens += cached
            seq.num_computed = cached
            seq.blocks = blocks
            self.free_blocks -= blocks
            if shared:
                self._read_group(seq, shared)
            seq.order = self.next_order
            self.next_order += 1
            seq.state = _PREFILLING
            self.running[seq.order] = seq
            self.prefilling.append(seq)
            chunks.append((seq, chunk))
            budget -= chunk

    def _read_group(self, seq: _Seq, shared: int) -> None:
        group = seq.request.prefix_group
        seq.shared = shared
        self.group_readers[group] += 1
        self.group_blocks.move_to_end(group)

    def _cache_group(self, seq: _Seq) -> None:
        """seq has just computed its group's prefix: the prefix's whole blocks pass from seq to
        the group, and seq reads them from there like every later sequence of the group."""
        group = seq.request.prefix_group
        self.cached_groups.add(group)
        blocks = seq.request.prefix_tokens // self.config.kv_block_size
        if not self.config.prefix_caching or not blocks:
            return
        seq.blocks -= blocks
        self.group_blocks[group] = blocks
        self.group_readers[group] = 0
        self._read_group(seq, blocks)

    def _evict_unread(self, keep: int | None = None) -> bool:
        """Free the least recently read cached prefix no running sequence reads (other than
        `keep`); False when there is none."""
        for group, blocks in self.group_blocks.items():
            if group != keep and not self.group_readers[group]:
                del self.group_blocks[group], self.group_readers[group]
                self.cached_groups.discard(group)
                self.free_blocks += blocks
                return True
        return False

    def _stop_reading(self, seq: _Seq) -> None:
        if seq.shared:
            self.group_readers[seq.request.prefix_group] -= 1
            seq.shared = 0

    def _prefix_hit(self, seq: _Seq) -> int:
        """Tokens of a cached shared prefix, leaving one token to compute (see reusable_tokens)."""
        request = seq.request
        if not self.config.prefix_caching or request.prefix_group not in self.cached_groups:
            return 0
        return reusable_tokens(self.config, min(request.prefix_tokens, seq.num_known - 1))

    def _after_chunk(self, seq: _Seq, chunk: int, step: int) -> None:
        seq.num_computed += chunk
        request = seq.request
        group = request.prefix_group
        if (
            group is not None
            and group not in self.cached_groups
            and seq.num_computed >= request.prefix_tokens
        ):
            self._cache_group(seq)
        if seq.num_computed < seq.num_known:
            return
        self.prefilling.remove(seq)
        seq.generated += 1
        seq.num_known += 1
        if seq.first_token_s is None:
            seq.first_token_s = self.clock
        if seq.generated >= request.output_tokens:
            self._complete(seq)
        else:
            self._start_decoding(seq, step + 1)

    def _start_decoding(self, seq: _Seq, first_step: int) -> None:
        seq.state = _DECODING
        seq.decode_start = first_step
        seq.decode_base_computed = seq.num_computed
        seq.decode_base_generated = seq.generated
        seq.finish_step = first_step + seq.request.output_tokens - seq.generated - 1
        self.decoders += 1
        self.decoder_computed += seq.num_computed
        heapq.heappush(self.finish_events, (seq.finish_step, seq.order, seq.epoch, seq))
        # The step whose token overflows the blocks held: computed before it = blocks * size.
        held = seq.blocks + seq.shared
        block_due = first_step + held * self.config.kv_block_size - seq.num_computed
        if block_due <= seq.finish_step:
            heapq.heappush(self.block_events, (block_due, seq.order, seq.epoch, seq))

    def _retire_decoders(self, step: int) -> None:
        while self.finish_events and self.finish_events[0][0] <= step:
            _, _, epoch, seq = heapq.heappop(self.finish_events)
            if seq.epoch != epoch or seq.state != _DECODING:
                continue
            self._leave_decoding(seq, step + 1)
            self._complete(seq)

    def _leave_decoding(self, seq: _Seq, steps_done_until: int) -> None:
        """Bring a decoder's counters up to date after the steps before `steps_done_until`."""
        done = steps_done_until - seq.decode_start
        seq.num_computed = seq.decode_base_computed + done
        seq.generated = seq.decode_base_generated + done
        self.decoders -= 1
        self.decoder_computed -= seq.num_computed

    # ------------------------------------------------------------ memory

    def _reserve_blocks(self, seq: _Seq, count: int, step: int) -> bool:
        """Take `count` free blocks for seq, preempting the newest running sequences as needed.

        Returns False when seq itself had to be preempted.
        """
        while self.free_blocks < count:
            if self._evict_unread():
                continue
            _, victim = self.running.popitem(last=True)
            self._preempt(victim, step)
            if victim is seq:
                return False
        self.free_blocks -= count
        seq.blocks += count
        return True

    def _preempt(self, seq: _Seq, step: int) -> None:
        """Drop seq's KV and requeue it at the front; it recomputes prompt plus output so far."""
        if seq.state == _DECODING:
            self._leave_decoding(seq, step)
        else:
            self.prefilling.remove(seq)
        self.free_blocks += seq.blocks
        seq.blocks = 0
        self._stop_reading(seq)
        seq.num_computed = 0
        seq.num_known = seq.request.input_tokens + seq.generated
        seq.epoch += 1
        seq.preemptions += 1
        seq.state = _WAITING
        self.waiting.appendleft(seq)

    def _complete(self, seq: _Seq) -> None:
        del self.running[seq.order]
        self.free_blocks += seq.blocks
        seq.blocks = 0
        self._stop_reading(seq)
        seq.state = _DONE
        self._record(seq.request, FINISHED, seq.arrival_s, seq.preemptions, seq.first_token_s)
        self._fill_clients(1)

    # ------------------------------------------------------------ results

    def _record(
        self,
        request: Request,
        status: str,
        arrival_s: float | None,
        preemptions: int,
        first_token_s: float | None = None,
    ) -> None:
        finish_s = self.clock if status == FINISHED else None
        ttft = e2e = tpot = None
        if finish_s is not None and first_token_s is not None and arrival_s is not None:
            ttft = (first_token_s - arrival_s) * 1e3
            e2e = (finish_s - arrival_s) * 1e3
            if request.output_tokens > 1:
                tpot = (e2e - ttft) / (request.output_tokens - 1)
        self.outcomes[request.index] = RequestOutcome(
            index=request.index,
            status=status,
            input_tokens=request.input_tokens,
            output_tokens=request.output_tokens,
            arrival_s=arrival_s,
            first_token_s=first_token_s,
            finish_s=finish_s,
            ttft_ms=ttft,
            tpot_ms=tpot,
            e2e_ms=e2e,
            preemptions=preemptions,
        )

    def _rows(self) -> list[RequestOutcome]:
        for seq in self.in_flight:
            if seq.state != _DONE:
                self._record(seq.request, UNFINISHED, seq.arrival_s, seq.preemptions)
        for request in self.pending:
            arrival = None if self.closed_loop else request.arrival_s
            self._record(request, UNFINISHED, arrival, preemptions=0)
        return [self.outcomes[index] for index in sorted(self.outcomes)]


def simulate(
    requests: Sequence[Request],
    step_time: StepTimes,
    config: EngineConfig,
    max_sim_seconds: float | None = None,
    *,
    slo: SLO | None = None,
    concurrency: int | None = None,
    max_steps: int | None = None,
    spread_start_s: float | None = None,
) -> SimResult:
    """Run the requests through one replica and summarise.

    Open loop by default (requests arrive at arrival_s). With `concurrency`, closed loop:
    that many clients each send the next request, in index order, when their previous one ends;
    all start together, or with `spread_start_s` one after another, evenly over that span.
    With `max_steps`, a run that needs more engine steps stops with SimulationTooLong.
    The simulation is deterministic: the same inputs always give the same result. `step_time`
    is a provider (a bare StepCost is the plain roofline).
    """
    if len({request.index for request in requests}) != len(requests):
        raise ValueError("requests: indexes must be unique")
    for request in requests:
        if request.input_tokens < 1 or request.output_tokens < 1:
            raise ValueError(f"requests[{request.index}]: input and output tokens must be >= 1")
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency: must be at least 1")
    if max_sim_seconds is not None and not max_sim_seconds > 0:
        raise ValueError("max_sim_seconds: must be positive")
    if max_steps is not None and max_steps < 1:
        raise ValueError("max_steps: must be at least 1")
    if spread_start_s is not None and (concurrency is None or not spread_start_s > 0):
        raise ValueError("spread_start_s: a positive span, for a closed loop only")
    engine = _Engine(
        requests,
        as_provider(step_time),
        config,
        max_sim_seconds,
        concurrency,
        max_steps,
        spread_start_s,
    )
    rows = engine.run()
    summary = summarize_outcomes(
        rows,
        slo=slo,
        prefix_hit_tokens=engine.prefix_hit_tokens,
        steps=engine.step_index,
        batch_tokens=engine.batch_tokens,
    )
    return SimResult(rows=rows, summary=summary)


def summarize_outcomes(
    rows: Sequence[RequestOutcome],
    *,
    slo: SLO | None,
    prefix_hit_tokens: int,
    steps: int,
    batch_tokens: int,
) -> SimSummary:
    """Run-level figures of finished simulation rows; the SLO verdict is the domain's `judge`."""
    done = [row for row in rows if row.status == FINISHED]
    arrivals = [row.arrival_s for row in rows if row.arrival_s is not None]
    start = min(arrivals) if arrivals else 0.0
    duration = max((row.finish_s or 0.0 for row in done), default=start) - start
    per_s = 1 / duration if duration > 0 else 0.0
    output_tokens = sum(row.output_tokens for row in done)
    attainment = goodput = within = met = verdict = None
    if slo is not None and rows:
        verdict = judge(
            slo,
            ok=[row.status == FINISHED for row in rows],
            ttft_ms=[row.ttft_ms for row in rows],
            tpot_ms=[row.tpot_ms for row in rows],
            e2e_ms=[row.e2e_ms for row in rows],
        )
        attainment = verdict.attainment
        goodput = verdict.met * per_s
        within = all(share >= slo.percentile / 100 for share in verdict.within.values())
        met = verdict.passed
    return SimSummary(
        requests=len(rows),
        finished=len(done),
        rejected=sum(row.status == REJECTED for row in rows),
        unfinished=sum(row.status == UNFINISHED for row in rows),
        duration_s=duration,
        throughput_rps=len(done) * per_s,
        output_tokens_per_s=output_tokens * per_s,
        total_tokens_per_s=(output_tokens + sum(row.input_tokens for row in done)) * per_s,
        preemptions=sum(row.preemptions for row in rows),
        prefix_hit_tokens=prefix_hit_tokens,
        steps=steps,
        mean_batch_tokens=batch_tokens / steps if steps else 0.0,
        ttft_ms=Percentiles.of([row.ttft_ms for row in done if row.ttft_ms is not None]),
        tpot_ms=Percentiles.of([row.tpot_ms for row in done if row.tpot_ms is not None]),
        e2e_ms=Percentiles.of([row.e2e_ms for row in done if row.e2e_ms is not None]),
        attainment=attainment,
        goodput_rps=goodput,
        percentiles_within_slo=within,
        slo_met=met,
        slo_verdict=verdict,
    )
