"""What the harness records per request and per load point, and the summary figures.

A metric that could not be measured is None, never zero (a failed request has no TTFT).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stackselect_domain.slo import SLO, SLOVerdict, judge

from stackselect_runner.harness.specs import LoadPoint

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)


@dataclass(slots=True)
class RequestRecord:
    """Timings are seconds; `send_s` is measured from the start of the load point."""

    index: int
    send_s: float
    input_tokens: int
    output_tokens: int = 0
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    e2e_s: float | None = None
    status: int | None = None
    finish_reason: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def tpot_s(self) -> float | None:
        """Mean time per output token after the first; None when it is undefined."""
        if not self.ok or self.ttft_s is None or self.e2e_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Linear interpolation between closest ranks (the usual "type 7" definition)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * pct / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    weight = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * weight


def distribution(values: Sequence[float]) -> dict[str, float | None]:
    stats: dict[str, float | None] = {f"p{pct}": percentile(values, pct) for pct in PERCENTILES}
    stats["mean"] = sum(values) / len(values) if values else None
    return stats


@dataclass(slots=True)
class LoadPointResult:
    point: LoadPoint
    records: list[RequestRecord]
    started_at_unix: float
    duration_s: float
    warmup_requests: int

    def summary(self) -> dict[str, Any]:
        ok = [record for record in self.records if record.ok]
        output_tokens = sum(record.output_tokens for record in ok)
        duration = self.duration_s if self.duration_s > 0 else None
        return {
            "requests": len(self.records),
            "completed": len(ok),
            "errors": len(self.records) - len(ok),
            "duration_s": self.duration_s,
            "request_throughput_rps": len(ok) / duration if duration else None,
            "output_throughput_tps": output_tokens / duration if duration else None,
            "ttft_s": distribution([r.ttft_s for r in ok if r.ttft_s is not None]),
            "tpot_s": distribution([r.tpot_s for r in ok if r.tpot_s is not None]),
            "itl_s": distribution([gap for r in ok for gap in r.itl_s]),
            "e2e_s": distribution([r.e2e_s for r in ok if r.e2e_s is not None]),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "point": self.point.as_dict(),
            "started_at_unix": self.started_at_unix,
            "duration_s": self.duration_s,
            "warmup_requests": self.warmup_requests,
            "summary": self.summary(),
            "records": [record.as_dict() for record in self.records],
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def records_verdict(records: Sequence[RequestRecord], slo: SLO) -> SLOVerdict:
    """The SLO verdict over one load point's records, by the server's own rule."""
    return judge(
        slo,
        ok=[record.ok for record in records],
        ttft_ms=[_ms(record.ttft_s) for record in records],
        tpot_ms=[_ms(record.tpot_s) for record in records],
        e2e_ms=[_ms(record.e2e_s) for record in records],
    )
