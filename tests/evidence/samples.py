"""Builders for hand-made records and uploads, so each test states only what it is about."""

from __future__ import annotations

from typing import Any

from apps.evidence.schema import LoadPointSamples, parse_upload


def record(position: int, **fields: Any) -> dict[str, Any]:
    """A completed, streamed request: 3 tokens, TTFT 0.1 s, two 0.05 s gaps, E2E 0.2 s."""
    base: dict[str, Any] = {
        "index": position,
        "send_s": 0.5 * position,
        "ttft_s": 0.1,
        "itl_s": [0.05, 0.05],
        "e2e_s": 0.2,
        "input_tokens": 100,
        "output_tokens": 3,
        "error": None,
        "status": 200,
    }
    return {**base, **fields}


def failed(position: int, error: str = "HTTP 500: boom") -> dict[str, Any]:
    return record(
        position, ttft_s=None, itl_s=[], e2e_s=None, output_tokens=0, error=error, status=500
    )


def streamed(position: int, *, ttft_s: float, gaps: list[float], **fields: Any) -> dict[str, Any]:
    """A completed request whose E2E and token count follow from TTFT and the gaps."""
    return record(
        position,
        ttft_s=ttft_s,
        itl_s=gaps,
        e2e_s=ttft_s + sum(gaps),
        output_tokens=len(gaps) + 1,
        **fields,
    )


def upload(records: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"load_point": {"rate_rps": 2.0}, "duration_s": 2.0, "records": records, **fields}


def samples(records: list[dict[str, Any]], **fields: Any) -> LoadPointSamples:
    return parse_upload(upload(records, **fields))
