"""Run one load point: warm-up, then the measurement window, on one asyncio loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from time import perf_counter

import aiohttp

from stackselect_runner.harness.prompts import PromptBuilder, VocabularyPromptBuilder
from stackselect_runner.harness.records import LoadPointResult, RequestRecord
from stackselect_runner.harness.specs import HarnessSpec, LoadPoint, RequestSpec
from stackselect_runner.harness.streaming import request_body, send_request

ProgressCallback = Callable[[int, int], None]
WARMUP_SALT = "warmup:"

Scheduled = tuple[RequestSpec, bytes]


def _prepare(spec: HarnessSpec, builder: PromptBuilder) -> tuple[list[Scheduled], list[Scheduled]]:
    """Build all bodies before the clock starts; warm-up reuses the first specs, new prompts."""
    ordered = sorted(spec.requests, key=lambda request: (request.arrival_s, request.index))
    measured = [
        (request, request_body(spec, request, builder.build(request, spec.shared_prefix_tokens)))
        for request in ordered
    ]
    warmup_specs = itertools.islice(itertools.cycle(ordered), spec.warmup_requests)
    warmup = [
        (
            request,
            request_body(
                spec, request, builder.build(request, spec.shared_prefix_tokens, WARMUP_SALT)
            ),
        )
        for request in warmup_specs
    ]
    return measured, warmup


async def _closed_loop(
    session: aiohttp.ClientSession,
    spec: HarnessSpec,
    scheduled: Sequence[Scheduled],
    concurrency: int,
    run_start: float,
    on_done: Callable[[RequestRecord], None],
) -> None:
    pending = iter(scheduled)

    async def worker() -> None:
        for request, body in pending:
            on_done(await send_request(session, spec, request, body, run_start))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(scheduled)))))


async def _open_loop(
    session: aiohttp.ClientSession,
    spec: HarnessSpec,
    scheduled: Sequence[Scheduled],
    rate_rps: float,
    run_start: float,
    on_done: Callable[[RequestRecord], None],
) -> None:
    async def send_and_report(request: RequestSpec, body: bytes) -> None:
        on_done(await send_request(session, spec, request, body, run_start))

    tasks: list[asyncio.Task[None]] = []
    for request, body in scheduled:
        delay = run_start + request.arrival_s / rate_rps - perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send_and_report(request, body)))
    await asyncio.gather(*tasks)


async def arun_load_point(
    spec: HarnessSpec,
    point: LoadPoint,
    *,
    prompt_builder: PromptBuilder | None = None,
    on_progress: ProgressCallback | None = None,
) -> LoadPointResult:
    """Async form of `run_load_point`, for callers that already run an event loop."""
    measured, warmup = _prepare(spec, prompt_builder or VocabularyPromptBuilder(spec.prompt_seed))
    in_flight = point.concurrency or len(measured)
    connector = aiohttp.TCPConnector(limit=max(in_flight, 1), limit_per_host=0)
    timeout = aiohttp.ClientTimeout(total=None)
    records: list[RequestRecord] = []

    def record_done(record: RequestRecord) -> None:
        records.append(record)
        if on_progress is not None:
            on_progress(len(records), len(measured))

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if warmup:
            await _closed_loop(session, spec, warmup, in_flight, perf_counter(), lambda _: None)
        started_at_unix = time.time()
        run_start = perf_counter()
        if point.rate_rps is not None:
            await _open_loop(session, spec, measured, point.rate_rps, run_start, record_done)
        else:
            await _closed_loop(session, spec, measured, in_flight, run_start, record_done)
        duration_s = perf_counter() - run_start
    records.sort(key=lambda record: record.index)
    return LoadPointResult(
        point=point,
        records=records,
        started_at_unix=started_at_unix,
        duration_s=duration_s,
        warmup_requests=len(warmup),
    )


def run_load_point(
    spec: HarnessSpec,
    point: LoadPoint,
    *,
    prompt_builder: PromptBuilder | None = None,
    on_progress: ProgressCallback | None = None,
) -> LoadPointResult:
    """Measure one load level on a fresh event loop (the entry point for sync callers)."""
    return asyncio.run(
        arun_load_point(spec, point, prompt_builder=prompt_builder, on_progress=on_progress)
    )
