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
    count,
    error_text,
    number,
    obj,
    offsets_from_first,
    optional_items,
    optional_number,
    optional_obj,
    optional_text,
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
    return None if entry is None else obj(entry, f"aiperf record metric {name}").get("value")


def _metric_number(metrics: Mapping[str, Any], name: str) -> float | None:
    return optional_number(_metric(metrics, name), f"aiperf record metric {name}")


def _tokens(metrics: Mapping[str, Any], server: str, client: str) -> int:
    value = _metric(metrics, server)
    value = value if value is not None else _metric(metrics, client) or 0
    return count(value, f"aiperf record metric {server}")


def _error(failure: Mapping[str, Any]) -> str | None:
    kind, message = failure.get("type"), failure.get("message")
    if kind and message:
        return error_text(f"{kind}: {message}")
    return error_text(optional_text(kind or message, "aiperf record error"))


def _load_point(input_config: Mapping[str, Any]) -> LoadPoint:
    phases = [
        phase
        for phase in optional_items(input_config.get("phases"), "aiperf input_config phases")
        if obj(phase, "aiperf input_config phase").get("kind") == PROFILING
    ]
    if len(phases) != 1:
        raise ValueError("aiperf input_config: expected exactly one profiling phase")
    phase = phases[0]
    if phase.get("rate") is not None:
        return LoadPoint(rate_rps=number(phase["rate"], "aiperf profiling phase rate"))
    if phase.get("concurrency") is not None:
        return LoadPoint(
            concurrency=count(phase["concurrency"], "aiperf profiling phase concurrency")
        )
    raise ValueError("aiperf profiling phase: neither rate nor concurrency is set")


def _requested_lengths(input_config: Mapping[str, Any]) -> tuple[float | None, float | None]:
    datasets = optional_items(input_config.get("datasets"), "aiperf input_config datasets")
    if len(datasets) != 1:
        return None, None
    dataset = obj(datasets[0], "aiperf input_config dataset")
    prompts = optional_obj(dataset.get("prompts"), "aiperf dataset prompts")
    return _mean(prompts, "isl"), _mean(prompts, "osl")


def _mean(prompts: Mapping[str, Any], key: str) -> float | None:
    lengths = optional_obj(prompts.get(key), f"aiperf prompts {key}")
    return optional_number(lengths.get("mean"), f"aiperf prompts {key} mean")


def _metadata(record: Any) -> Mapping[str, Any]:
    return optional_obj(obj(record, "aiperf record").get("metadata"), "aiperf record metadata")


def import_aiperf(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> ImportedRun:
    """Map one AIPerf run: the summary JSON and the decoded lines of the records file."""
    input_config = obj(require(summary, "input_config", "aiperf summary"), "aiperf input_config")
    endpoint = optional_obj(input_config.get("endpoint"), "aiperf input_config endpoint")
    streaming = bool(endpoint.get("streaming"))
    measured = [r for r in records if _metadata(r).get("benchmark_phase") == PROFILING]
    starts = [
        optional_number(
            require(r["metadata"], "request_start_ns", "aiperf record metadata"),
            "aiperf record metadata request_start_ns",
        )
        for r in measured
    ]
    builder = RecordBuilder()
    for record, send_s in zip(measured, offsets_from_first(starts), strict=True):
        metrics = obj(require(record, "metrics", "aiperf record"), "aiperf record metrics")
        failure = optional_obj(record.get("error"), "aiperf record error")
        error = _error(failure)
        gaps = optional_items(
            _metric(metrics, "inter_chunk_latency"), "aiperf record metric inter_chunk_latency"
        )
        builder.add(
            send_s=scaled(send_s, NS),
            ttft_s=scaled(_metric_number(metrics, "time_to_first_token"), MS),
            itl_s=[number(gap, "aiperf record metric inter_chunk_latency") * MS for gap in gaps]
            if streaming and error is None
            else None,
            e2e_s=scaled(_metric_number(metrics, "request_latency"), MS),
            input_tokens=_tokens(metrics, "usage_prompt_tokens", "input_sequence_length"),
            output_tokens=_tokens(metrics, "usage_completion_tokens", "output_sequence_length"),
            error=error,
            status=failure.get("code"),
        )
    duration = number(
        require(
            require(summary, "benchmark_duration", "aiperf summary"),
            "avg",
            "aiperf benchmark_duration",
        ),
        "aiperf benchmark_duration avg",
    )
    isl, osl = _requested_lengths(input_config)
    models = optional_obj(input_config.get("models"), "aiperf input_config models")
    model = (optional_items(models.get("items"), "aiperf models items") or [{}])[0]
    tokenizer = optional_obj(input_config.get("tokenizer"), "aiperf input_config tokenizer")
    return ImportedRun(
        identity={
            "harness_tool": TOOL,
            "harness_version": summary.get("aiperf_version"),
            "model": obj(model, "aiperf model").get("name"),
            "tokenizer": tokenizer.get("name"),
        },
        load_points=[builder.samples(_load_point(input_config), duration, multi_token_chunks=True)],
        notes=list(NOTES),
        requested_isl=isl,
        requested_osl=osl,
    )
