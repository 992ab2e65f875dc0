"""inference-perf: `summary_lifecycle_metrics.json` + `per_request_lifecycle_metrics.json`.

Per request it keeps start/end times and the arrival time of every streamed chunk, in
seconds, so TTFT, ITL and E2E are all measured. Neither file states the tool's version or
the load stage, so the caller passes them (one stage per import).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    optional_obj,
    require,
)
from apps.evidence.schema import LoadPoint

TOOL = "inference-perf"
REQUEST = "inference-perf request"
NOTES = [
    "inference-perf's time_per_output_token is our TPOT but divides by a client "
    "re-tokenisation of the output; TPOT is recomputed with the server's completion tokens.",
    "inference-perf's inter_token_latency spreads client tokens over chunks (zero gaps inside "
    "a chunk); our ITL is the gap between consecutive chunk_times.",
    "TTFT = first chunk time - start_time; E2E = end_time - start_time (seconds).",
    "Token counts are the server's usage when reported, else inference-perf's client counts.",
]


def _error(failure: Any) -> str | None:
    if not failure:
        return None
    if isinstance(failure, Mapping):
        return error_text(f"{failure.get('error_type')}: {failure.get('error_msg')}")
    return error_text(str(failure))


@dataclass
class _Counts:
    """How many requests lacked the server's usage, and how many of those were corrected."""

    without_usage: int = 0
    raised: int = 0

    def notes(self, requests: int) -> list[str]:
        notes = []
        if self.without_usage:
            notes.append(
                f"{self.without_usage} of {requests} request(s) had no server usage: their token "
                "counts are inference-perf's client re-tokenisation, which is approximate."
            )
        if self.raised:
            notes.append(
                f"{self.raised} of those counted fewer output tokens than streamed chunks; their "
                "output_tokens were raised to the chunk count, a lower bound (every streamed "
                "chunk carries at least one token)."
            )
        return notes


def _output_tokens(
    usage: Mapping[str, Any], response: Mapping[str, Any], chunks: int, counts: _Counts
) -> int:
    """The server's completion tokens; else the client's count, never below the chunk count.

    A server count below the chunk count contradicts the timings and is left for the schema to
    refuse; a client count there is only a re-tokenisation that merged tokens.
    """
    if usage.get("completion_tokens") is not None:
        return count(usage["completion_tokens"], "inference-perf server_usage completion_tokens")
    counts.without_usage += 1
    client = count(response.get("output_tokens") or 0, "inference-perf output_tokens")
    if client < chunks:
        counts.raised += 1
        return chunks
    return client


def _add_request(
    builder: RecordBuilder, request: Mapping[str, Any], send_s: float, counts: _Counts
) -> None:
    start = number(require(request, "start_time", REQUEST), f"{REQUEST} start_time")
    end = number(require(request, "end_time", REQUEST), f"{REQUEST} end_time")
    info = optional_obj(request.get("info"), f"{REQUEST} info")
    response = optional_obj(info.get("response_metrics"), f"{REQUEST} response_metrics")
    usage = optional_obj(response.get("server_usage"), f"{REQUEST} server_usage")
    chunk_times = [
        number(time, f"{REQUEST} chunk_times")
        for time in optional_items(response.get("chunk_times"), f"{REQUEST} chunk_times")
    ]
    error = _error(request.get("error"))
    streamed = bool(chunk_times) and error is None
    builder.add(
        send_s=send_s,
        ttft_s=chunk_times[0] - start if streamed else None,
        itl_s=np.diff(chunk_times).tolist() if streamed else None,
        e2e_s=end - start,
        input_tokens=count(
            usage.get("prompt_tokens") or info.get("input_tokens") or 0, f"{REQUEST} input tokens"
        ),
        output_tokens=_output_tokens(usage, response, len(chunk_times) if streamed else 0, counts),
        error=error,
    )


def import_inference_perf(
    summary: Mapping[str, Any],
    per_request: Sequence[Mapping[str, Any]],
    *,
    load_point: LoadPoint,
    tool_version: str | None = None,
    requested_isl: float | None = None,
    requested_osl: float | None = None,
) -> ImportedRun:
    """Map one single-stage inference-perf run; `load_point` is the stage that was run."""
    duration = number(
        require(summary, "benchmark_time_seconds", "inference-perf summary"),
        "inference-perf summary benchmark_time_seconds",
    )
    per_request = items(per_request, "inference-perf per-request metrics")
    starts = [
        optional_number(require(request, "start_time", REQUEST), f"{REQUEST} start_time")
        for request in per_request
    ]
    builder, counts = RecordBuilder(), _Counts()
    for request, send_s in zip(per_request, offsets_from_first(starts), strict=True):
        _add_request(builder, request, send_s, counts)
    return ImportedRun(
        identity={"harness_tool": TOOL, "harness_version": tool_version},
        load_points=[builder.samples(load_point, duration, multi_token_chunks=True)],
        notes=[*NOTES, *counts.notes(len(per_request))],
        requested_isl=requested_isl,
        requested_osl=requested_osl,
    )
