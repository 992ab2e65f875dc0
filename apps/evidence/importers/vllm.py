"""`vllm bench serve --save-result --save-detailed`: one JSON file, per-request lists in seconds.

Keys read (vllm/benchmarks/serve.py writes them): `ttfts`, `itls`, `latencies`,
`input_lens`, `output_lens`, `errors`, optional `start_times`, and the traffic settings
`request_rate`, `max_concurrency`, `duration`, `model_id`, `tokenizer_id`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.evidence.importers.base import (
    ImportedRun,
    RecordBuilder,
    count,
    error_text,
    items,
    number,
    offsets_from_first,
    optional_items,
    optional_number,
    optional_text,
    require,
)
from apps.evidence.schema import LoadPoint

TOOL = "vllm bench serve"
WHERE = "vllm result (run with --save-detailed)"
PER_REQUEST_KEYS = ("ttfts", "itls", "latencies", "input_lens", "output_lens", "errors")
NOTES = [
    "vLLM's TPOT already excludes the first token; TPOT is recomputed from latencies and "
    "ttfts as (E2E - TTFT) / (output tokens - 1).",
    "vLLM's per-request `itls` are the gaps between streamed chunks, used as our ITL; a "
    "chunk may carry several tokens, so only more chunks than tokens is refused.",
    "`output_lens` are the server's usage counts or vLLM's re-tokenisation of the text.",
    "Failed requests keep vLLM's 0.0 placeholders out: their TTFT and E2E are missing.",
]


def _load_point(result: Mapping[str, Any], requests: int) -> tuple[LoadPoint, list[str]]:
    rate, concurrency = result.get("request_rate", "inf"), result.get("max_concurrency")
    if rate not in ("inf", None, float("inf")):
        capped = [] if concurrency is None else [f"the rate was capped at {concurrency} in flight"]
        return LoadPoint(rate_rps=number(rate, "vllm result request_rate")), capped
    if concurrency is not None:
        return LoadPoint(concurrency=count(concurrency, "vllm result max_concurrency")), []
    return LoadPoint(concurrency=requests), ["request_rate inf: every request was sent at once"]


def import_vllm(result: Mapping[str, Any], *, tool_version: str | None = None) -> ImportedRun:
    """Map one result file; `tool_version` is vLLM's version (the file does not state it)."""
    columns = {
        key: items(require(result, key, WHERE), f"vllm result {key}") for key in PER_REQUEST_KEYS
    }
    requests = len(columns["ttfts"])
    if any(len(values) != requests for values in columns.values()):
        raise ValueError("vllm result: per-request lists have different lengths")
    starts = [
        optional_number(start, "vllm result start_times")
        for start in optional_items(result.get("start_times"), "vllm result start_times")
    ] or [None] * requests
    if len(starts) != requests:
        raise ValueError(f"vllm result: {len(starts)} start_times for {requests} requests")
    builder = RecordBuilder()
    for position, send_s in enumerate(offsets_from_first(starts)):
        error = error_text(optional_text(columns["errors"][position], "vllm result errors"))
        ok = error is None
        builder.add(
            send_s=send_s,
            ttft_s=columns["ttfts"][position] if ok else None,
            itl_s=list(items(columns["itls"][position], "vllm result itls")) if ok else None,
            e2e_s=columns["latencies"][position] if ok else None,
            input_tokens=count(columns["input_lens"][position], "vllm result input_lens"),
            output_tokens=count(columns["output_lens"][position], "vllm result output_lens"),
            error=error,
        )
    load_point, traffic_notes = _load_point(result, requests)
    duration = number(require(result, "duration", "vllm result"), "vllm result duration")
    identity = {
        "harness_tool": TOOL,
        "harness_version": tool_version,
        "model": result.get("model_id"),
        "tokenizer": result.get("tokenizer_id"),
    }
    notes = [*NOTES, *traffic_notes]
    if not result.get("start_times"):
        notes.append("this vLLM version saved no start_times: send times are missing")
    return ImportedRun(
        identity=identity,
        load_points=[builder.samples(load_point, duration, multi_token_chunks=True)],
        notes=notes,
    )
