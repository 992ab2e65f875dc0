"""NVIDIA AIPerf: `profile_export_aiperf.json` (run summary) + `profile_export.jsonl` (records).

Each record line holds `metadata` (phase, start/end in ns), `metrics` (`{value, unit}` per
name, times in ms) and `error` (`{code, type, message}`) when the request failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apps.evidence.importers.base import (
    MS,
    NS,
    ImportedRun,
    RecordBuilder,
    error_text,
    offsets_from_first,
    require,
    scaled,
)
from apps.evidence.schema import LoadPoint

TOOL = "aiperf"
PROFILING = "profiling"
NOTES = [
    "AIPerf's inter_token_latency is (latency - TTFT) / (OSL - 1), i.e. our TPOT; TPOT is "
    "recomputed with the server's completion token count.",
    "AIPerf's inter_chunk_latency (the gaps between streamed chunks) is used as our ITL.",
    "AIPerf times are in ms and were converted to seconds; warm-up records are left out.",
    "Token counts are the server's usage (usage_prompt_tokens, usage_completion_tokens) when "
    "reported, else AIPerf's client tokenisation (input/output_sequence_length).",
]


def _metric(metrics: Mapping[str, Any], name: str) -> Any:
    entry = metrics.get(name)
    return None if entry is None else entry.get("value")


def _tokens(metrics: Mapping[str, Any], server: str, client: str) -> int:
    value = _metric(metrics, server)
    return int(value if value is not None else _metric(metrics, client) or 0)


def _error(failure: Mapping[str, Any]) -> str | None:
    kind, message = failure.get("type"), failure.get("message")
    return error_text(f"{kind}: {message}" if kind and message else kind or message)


def _load_point(input_config: Mapping[str, Any]) -> LoadPoint:
    phases = [p for p in input_config.get("phases") or [] if p.get("kind") == PROFILING]
    if len(phases) != 1:
        raise ValueError("aiperf input_config: expected exactly one profiling phase")
    phase = phases[0]
    if phase.get("rate") is not None:
        return LoadPoint(rate_rps=float(phase["rate"]))
    if phase.get("concurrency") is not None:
        return LoadPoint(concurrency=int(phase["concurrency"]))
    raise ValueError("aiperf profiling phase: neither rate nor concurrency is set")


def _requested_lengths(input_config: Mapping[str, Any]) -> tuple[float | None, float | None]:
    datasets = input_config.get("datasets") or []
    prompts = datasets[0].get("prompts") or {} if len(datasets) == 1 else {}
    return (prompts.get("isl") or {}).get("mean"), (prompts.get("osl") or {}).get("mean")


def import_aiperf(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> ImportedRun:
    """Map one AIPerf run: the summary JSON and the decoded lines of the records file."""
    input_config = require(summary, "input_config", "aiperf summary")
    streaming = bool((input_config.get("endpoint") or {}).get("streaming"))
    measured = [r for r in records if (r.get("metadata") or {}).get("benchmark_phase") == PROFILING]
    starts = [
        require(r["metadata"], "request_start_ns", "aiperf record metadata") for r in measured
    ]
    builder = RecordBuilder()
    for record, send_s in zip(measured, offsets_from_first(starts), strict=True):
        metrics = require(record, "metrics", "aiperf record")
        failure = record.get("error") or {}
        error = _error(failure)
        gaps = _metric(metrics, "inter_chunk_latency")
        builder.add(
            send_s=scaled(send_s, NS),
            ttft_s=scaled(_metric(metrics, "time_to_first_token"), MS),
            itl_s=[gap * MS for gap in gaps or []] if streaming and error is None else None,
            e2e_s=scaled(_metric(metrics, "request_latency"), MS),
            input_tokens=_tokens(metrics, "usage_prompt_tokens", "input_sequence_length"),
            output_tokens=_tokens(metrics, "usage_completion_tokens", "output_sequence_length"),
            error=error,
            status=failure.get("code"),
        )
    duration = float(
        require(
            require(summary, "benchmark_duration", "aiperf summary"),
            "avg",
            "aiperf benchmark_duration",
        )
    )
    isl, osl = _requested_lengths(input_config)
    models = ((input_config.get("models") or {}).get("items")) or [{}]
    return ImportedRun(
        identity={
            "harness_tool": TOOL,
            "harness_version": summary.get("aiperf_version"),
            "model": models[0].get("name"),
            "tokenizer": (input_config.get("tokenizer") or {}).get("name"),
        },
        load_points=[builder.samples(_load_point(input_config), duration, multi_token_chunks=True)],
        notes=list(NOTES),
        requested_isl=isl,
        requested_osl=osl,
    )
