"""guidellm `benchmarks.json`: one load point per benchmark, per-request stats inside.

Per request guidellm keeps start/end times, TTFT in ms, token counts and per-request means,
but not the gap between every pair of tokens, so ITL percentiles are missing, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.evidence.importers.base import (
    MS,
    ImportedRun,
    RecordBuilder,
    count,
    error_text,
    items,
    number,
    obj,
    optional_items,
    optional_number,
    optional_obj,
    optional_text,
    require,
    scaled,
)
from apps.evidence.schema import LoadPoint, LoadPointSamples

TOOL = "guidellm"
BENCHMARK = "guidellm benchmark"
STRATEGY = "guidellm strategy"
REQUEST = "guidellm request"
INCOMPLETE = "incomplete: cancelled at the end of the benchmark window"
NOTES = [
    "guidellm's time_per_output_token_ms divides by every output token, the first included; "
    "TPOT is recomputed as (E2E - TTFT) / (output tokens - 1) from request_latency and "
    "time_to_first_token_ms.",
    "guidellm's per-request inter_token_latency_ms is the mean gap after the first token "
    "(our TPOT), not the gaps themselves: guidellm records no per-token gaps, so ITL is "
    "missing.",
    "Token counts are guidellm's prompt_tokens/output_tokens (the server's usage when it "
    "reports one); errored and incomplete requests count as errors.",
]


def _load_point(strategy: Mapping[str, Any]) -> LoadPoint:
    kind = require(strategy, "type_", STRATEGY)
    if kind in ("constant", "poisson"):
        return LoadPoint(rate_rps=number(require(strategy, "rate", STRATEGY), f"{STRATEGY} rate"))
    if kind == "synchronous":
        return LoadPoint(concurrency=1)
    if kind == "concurrent":
        streams = require(strategy, "streams", STRATEGY)
        return LoadPoint(concurrency=count(streams, f"{STRATEGY} streams"))
    if kind == "throughput" and strategy.get("max_concurrency"):
        return LoadPoint(
            concurrency=count(strategy["max_concurrency"], f"{STRATEGY} max_concurrency")
        )
    raise ValueError(f"guidellm strategy: {kind!r} has no fixed rate or concurrency")


def _add_request(
    builder: RecordBuilder, request: Mapping[str, Any], start: float, error: str | None
) -> None:
    sent = optional_number(request.get("request_start_time"), f"{REQUEST} request_start_time")
    ttft_ms = optional_number(request.get("time_to_first_token_ms"), f"{REQUEST} ttft")
    ok = error is None
    builder.add(
        send_s=None if sent is None else sent - start,
        ttft_s=scaled(ttft_ms, MS) if ok else None,
        itl_s=None,
        e2e_s=optional_number(request.get("request_latency"), f"{REQUEST} request_latency")
        if ok
        else None,
        input_tokens=count(request.get("prompt_tokens") or 0, f"{REQUEST} prompt_tokens"),
        output_tokens=count(request.get("output_tokens") or 0, f"{REQUEST} output_tokens"),
        error=error,
    )


def _requests(requests: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    where = f"guidellm requests {kind}"
    return [obj(request, where) for request in optional_items(requests.get(kind), where)]


def _benchmark(benchmark: Mapping[str, Any]) -> LoadPointSamples:
    config = require(benchmark, "config", BENCHMARK)
    requests = obj(require(benchmark, "requests", BENCHMARK), f"{BENCHMARK} requests")
    start = number(require(benchmark, "start_time", BENCHMARK), f"{BENCHMARK} start_time")
    builder = RecordBuilder()
    for request in _requests(requests, "successful"):
        _add_request(builder, request, start, None)
    for request in _requests(requests, "errored"):
        info = optional_obj(request.get("info"), f"{REQUEST} info")
        message = error_text(optional_text(info.get("error"), f"{REQUEST} error")) or "errored"
        _add_request(builder, request, start, message)
    for request in _requests(requests, "incomplete"):
        _add_request(builder, request, start, INCOMPLETE)
    point = _load_point(require(config, "strategy", "guidellm benchmark config"))
    duration = number(require(benchmark, "duration", BENCHMARK), f"{BENCHMARK} duration")
    return builder.samples(point, duration, multi_token_chunks=False)


def _requested_lengths(spec: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The lengths asked for, when the spec names one synthetic data source."""
    where = "guidellm spec data"
    data = optional_items(spec.get("data"), where)
    if len(data) != 1:
        return None, None
    source = obj(data[0], where)
    if source.get("kind") != "synthetic_text":
        return None, None
    return (
        optional_number(source.get("prompt_tokens"), f"{where} prompt_tokens"),
        optional_number(source.get("output_tokens"), f"{where} output_tokens"),
    )


def import_guidellm(report: Mapping[str, Any]) -> ImportedRun:
    """Map a guidellm report (format version 2, guidellm 0.8)."""
    metadata = obj(require(report, "metadata", "guidellm report"), "guidellm metadata")
    benchmarks = items(require(report, "benchmarks", "guidellm report"), "guidellm benchmarks")
    config = optional_obj(report.get("config"), "guidellm config")
    spec = optional_obj(config.get("spec"), "guidellm config spec")
    isl, osl = _requested_lengths(spec)
    backend = optional_obj(spec.get("backend"), "guidellm spec backend")
    return ImportedRun(
        identity={
            "harness_tool": TOOL,
            "harness_version": metadata.get("guidellm_version"),
            "model": backend.get("model"),
        },
        load_points=[_benchmark(benchmark) for benchmark in benchmarks],
        notes=list(NOTES),
        requested_isl=isl,
        requested_osl=osl,
    )
