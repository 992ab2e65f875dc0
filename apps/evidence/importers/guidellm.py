"""guidellm `benchmarks.json`: one load point per benchmark, per-request stats inside.

Per request guidellm keeps start/end times, TTFT in ms, token counts and per-request means,
but not the gap between every pair of tokens, so ITL percentiles are missing, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.evidence.importers.base import MS, ImportedRun, RecordBuilder, error_text, require, scaled
from apps.evidence.schema import LoadPoint, LoadPointSamples

TOOL = "guidellm"
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
    kind = require(strategy, "type_", "guidellm strategy")
    if kind in ("constant", "poisson"):
        return LoadPoint(rate_rps=float(require(strategy, "rate", "guidellm strategy")))
    if kind == "synchronous":
        return LoadPoint(concurrency=1)
    if kind == "concurrent":
        return LoadPoint(concurrency=int(require(strategy, "streams", "guidellm strategy")))
    if kind == "throughput" and strategy.get("max_concurrency"):
        return LoadPoint(concurrency=int(strategy["max_concurrency"]))
    raise ValueError(f"guidellm strategy: {kind!r} has no fixed rate or concurrency")


def _add_request(
    builder: RecordBuilder, request: Mapping[str, Any], start: float, error: str | None
) -> None:
    sent = request.get("request_start_time")
    ok = error is None
    builder.add(
        send_s=None if sent is None else sent - start,
        ttft_s=scaled(request.get("time_to_first_token_ms"), MS) if ok else None,
        itl_s=None,
        e2e_s=request.get("request_latency") if ok else None,
        input_tokens=int(request.get("prompt_tokens") or 0),
        output_tokens=int(request.get("output_tokens") or 0),
        error=error,
    )


def _benchmark(benchmark: Mapping[str, Any]) -> LoadPointSamples:
    config = require(benchmark, "config", "guidellm benchmark")
    requests = require(benchmark, "requests", "guidellm benchmark")
    start = float(require(benchmark, "start_time", "guidellm benchmark"))
    builder = RecordBuilder()
    for request in requests.get("successful") or []:
        _add_request(builder, request, start, None)
    for request in requests.get("errored") or []:
        message = error_text((request.get("info") or {}).get("error")) or "errored"
        _add_request(builder, request, start, message)
    for request in requests.get("incomplete") or []:
        _add_request(builder, request, start, INCOMPLETE)
    point = _load_point(require(config, "strategy", "guidellm benchmark config"))
    duration = float(require(benchmark, "duration", "guidellm benchmark"))
    return builder.samples(point, duration, multi_token_chunks=False)


def _requested_lengths(spec: Mapping[str, Any]) -> tuple[float | None, float | None]:
    data = spec.get("data") or []
    if len(data) != 1 or data[0].get("kind") != "synthetic_text":
        return None, None
    return data[0].get("prompt_tokens"), data[0].get("output_tokens")


def import_guidellm(report: Mapping[str, Any]) -> ImportedRun:
    """Map a guidellm report (format version 2, guidellm 0.8)."""
    metadata = require(report, "metadata", "guidellm report")
    benchmarks = require(report, "benchmarks", "guidellm report")
    spec = (report.get("config") or {}).get("spec") or {}
    isl, osl = _requested_lengths(spec)
    return ImportedRun(
        identity={
            "harness_tool": TOOL,
            "harness_version": metadata.get("guidellm_version"),
            "model": (spec.get("backend") or {}).get("model"),
        },
        load_points=[_benchmark(benchmark) for benchmark in benchmarks],
        notes=list(NOTES),
        requested_isl=isl,
        requested_osl=osl,
    )
