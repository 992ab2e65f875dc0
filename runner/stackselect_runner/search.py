"""Adaptive search for the highest request rate that meets the SLO attainment target.

Instead of a fixed ladder of load points, the runner brackets the answer and bisects it, so
engine time goes only to rates near the answer:

1. Probe `start_rate_rps`.
2. Bracket: while every probe passed, double the highest passing rate (capped at
   `max_rate_rps`); while every probe failed, halve the lowest failing rate (floored at
   `min_rate_rps`).
3. Bisect: probe the middle of [highest pass below the lowest fail, lowest fail] until
   (high - low) <= tolerance * high.

The answer is the highest passing rate of the final bracket: a rate that was measured to pass,
and within `tolerance` of the true crossing when attainment falls with the rate. The search
ends early at `max_rate_rps` when it passes (the answer is "at least" that rate), at
`min_rate_rps` when it fails (below the range) or after `max_probes` probes.

Attainment is computed exactly as apps/evidence/analysis.py does on the server (the runner
cannot import the web app): the share of ALL requests that meet every target; a failed request
never meets it; a completed request whose metric is undefined (TPOT of a one-token output)
cannot miss that target; when no completed request measured a targeted metric, attainment is
unknowable (None). A probe passes when attainment >= the SLO's `attainment`, the rule of
apps/evidence/analysis.max_rate_meeting. The SLO's `percentile` is carried for the record: with
percentile <= 100 * attainment (99 and 0.99 by default) a passing probe also holds every
metric's percentile within its target, since that share of requests meets all targets at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from stackselect_runner.checks import require_int, require_number

GROWTH_FACTOR = 2.0
DEFAULT_TOLERANCE = 0.05
DEFAULT_PERCENTILE = 99.0
DEFAULT_ATTAINMENT = 0.99
SLO_TARGETS = ("ttft_ms", "tpot_ms", "e2e_ms")
MS = 1000.0

SearchBound = Literal["bracketed", "at_least", "below_range", "probe_limit"]


class TimedRequest(Protocol):
    """What attainment needs of a request record (harness.RequestRecord has it)."""

    @property
    def ok(self) -> bool: ...

    @property
    def ttft_s(self) -> float | None: ...

    @property
    def tpot_s(self) -> float | None: ...

    @property
    def e2e_s(self) -> float | None: ...


def _positive_or_none(data: Mapping[str, Any], name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    return require_number(value, f"search.slo.{name}", 0.0, strict=True)


@dataclass(frozen=True, slots=True)
class SearchSLO:
    """Latency targets in milliseconds (None = no target) and the attainment to reach."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    percentile: float = DEFAULT_PERCENTILE
    attainment: float = DEFAULT_ATTAINMENT

    def __post_init__(self) -> None:
        if not self.targets():
            raise ValueError("search.slo: set at least one of ttft_ms, tpot_ms, e2e_ms")
        if not 0 < self.percentile <= 100:
            raise ValueError(f"search.slo.percentile must be in (0, 100], got {self.percentile}")
        if not 0 < self.attainment <= 1:
            raise ValueError(f"search.slo.attainment must be in (0, 1], got {self.attainment}")

    @classmethod
    def from_dict(cls, data: Any) -> SearchSLO:
        if not isinstance(data, Mapping):
            raise ValueError("search.slo must be an object")
        percentile = data.get("percentile")
        attainment = data.get("attainment")
        return cls(
            **{name: _positive_or_none(data, name) for name in SLO_TARGETS},
            percentile=DEFAULT_PERCENTILE
            if percentile is None
            else require_number(percentile, "search.slo.percentile", 0.0, strict=True),
            attainment=DEFAULT_ATTAINMENT
            if attainment is None
            else require_number(attainment, "search.slo.attainment", 0.0, strict=True),
        )

    def targets(self) -> dict[str, float]:
        named = {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms}
        return {name: target for name, target in named.items() if target is not None}


def _metric_s(record: TimedRequest, target: str) -> float | None:
    return {"ttft_ms": record.ttft_s, "tpot_ms": record.tpot_s, "e2e_ms": record.e2e_s}[target]


def attainment(records: Sequence[TimedRequest], slo: SearchSLO) -> float | None:
    """Share of all requests meeting every target (rules in the module docstring).

    None when there are no records or a targeted metric was never measured.
    """
    if not records:
        return None
    completed = [record for record in records if record.ok]
    for target in slo.targets():
        if completed and all(_metric_s(record, target) is None for record in completed):
            return None
    met = 0
    for record in completed:
        values = ((_metric_s(record, name), limit) for name, limit in slo.targets().items())
        if all(value is None or value <= limit / MS for value, limit in values):
            met += 1
    return met / len(records)


@dataclass(frozen=True, slots=True)
class SearchSpec:
    """The job spec's `search` section (runner/PROTOCOL.md)."""

    slo: SearchSLO
    start_rate_rps: float
    min_rate_rps: float
    max_rate_rps: float
    requests_per_probe: int
    max_probes: int = 8
    tolerance: float = DEFAULT_TOLERANCE

    def __post_init__(self) -> None:
        for name in ("start_rate_rps", "min_rate_rps", "max_rate_rps"):
            rate = require_number(getattr(self, name), f"search.{name}", 0.0, strict=True)
            if not math.isfinite(rate):
                raise ValueError(f"search.{name} must be finite, got {rate}")
        if not self.min_rate_rps <= self.start_rate_rps <= self.max_rate_rps:
            raise ValueError(
                "search: need min_rate_rps <= start_rate_rps <= max_rate_rps, got "
                f"{self.min_rate_rps:g}, {self.start_rate_rps:g}, {self.max_rate_rps:g}"
            )
        require_int(self.requests_per_probe, "search.requests_per_probe", 1)
        require_int(self.max_probes, "search.max_probes", 1)
        if not 0 < self.tolerance < 1:
            raise ValueError(f"search.tolerance must be in (0, 1), got {self.tolerance}")

    @classmethod
    def from_dict(cls, data: Any) -> SearchSpec:
        if not isinstance(data, Mapping):
            raise ValueError("search must be an object or null")
        for name in ("slo", "start_rate_rps", "max_rate_rps", "requests_per_probe"):
            if data.get(name) is None:
                raise ValueError(f"search: missing field '{name}'")
        start = data["start_rate_rps"]
        return cls(
            slo=SearchSLO.from_dict(data["slo"]),
            start_rate_rps=start,
            min_rate_rps=data.get("min_rate_rps", start),
            max_rate_rps=data["max_rate_rps"],
            requests_per_probe=data["requests_per_probe"],
            max_probes=data.get("max_probes", 8),
            tolerance=data.get("tolerance", DEFAULT_TOLERANCE),
        )


@dataclass(frozen=True, slots=True)
class Probe:
    index: int
    rate_rps: float
    attainment: float
    passed: bool

    def describe(self) -> str:
        verdict = "pass" if self.passed else "fail"
        share = f"attainment {self.attainment:.1%}"
        return f"probe {self.index}: {self.rate_rps:.4g} req/s, {share}, {verdict}"


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The final bracket: `low` passed, `high` failed (either may be missing) and why it ended."""

    low_rps: float | None
    high_rps: float | None
    bound: SearchBound
    probes: tuple[Probe, ...]

    @property
    def rate_rps(self) -> float | None:
        """The answer: the highest rate measured to pass below the first failure."""
        return self.low_rps

    def describe(self) -> str:
        count = f"{len(self.probes)} probe(s)"
        if self.bound == "below_range":
            return f"no rate meets the SLO: {self.high_rps:.4g} req/s already fails ({count})"
        if self.bound == "at_least":
            return (
                f"the SLO holds up to the highest rate searched, {self.low_rps:.4g} req/s ({count})"
            )
        bracket = f"bracket [{_rate(self.low_rps)}, {_rate(self.high_rps)}] req/s"
        if self.bound == "probe_limit":
            return f"probe limit reached before the bracket closed: {bracket} ({count})"
        return f"highest rate meeting the SLO: {self.low_rps:.4g} req/s, {bracket} ({count})"


def _rate(rate: float | None) -> str:
    return "?" if rate is None else f"{rate:.4g}"


@dataclass(slots=True)
class RateSearch:
    """Decides the next probe rate from the probes so far; no I/O, so it is tested alone."""

    spec: SearchSpec
    probes: list[Probe] = field(default_factory=list)

    def bracket(self) -> tuple[float | None, float | None]:
        """(highest pass below the lowest fail, lowest fail); a pass above a fail is noise."""
        failing = [probe.rate_rps for probe in self.probes if not probe.passed]
        high = min(failing) if failing else None
        passing = [
            probe.rate_rps
            for probe in self.probes
            if probe.passed and (high is None or probe.rate_rps < high)
        ]
        return (max(passing) if passing else None), high

    def _stop_reason(self) -> SearchBound | None:
        low, high = self.bracket()
        if low is not None and high is not None and high - low <= self.spec.tolerance * high:
            return "bracketed"
        if high is None and low is not None and low >= self.spec.max_rate_rps:
            return "at_least"
        if low is None and high is not None and high <= self.spec.min_rate_rps:
            return "below_range"
        if len(self.probes) >= self.spec.max_probes:
            return "probe_limit"
        return None

    def next_rate(self) -> float | None:
        """The rate of the next probe, or None when the search is over."""
        if not self.probes:
            return self.spec.start_rate_rps
        if self._stop_reason() is not None:
            return None
        low, high = self.bracket()
        if high is None:
            assert low is not None
            return min(low * GROWTH_FACTOR, self.spec.max_rate_rps)
        if low is None:
            return max(high / GROWTH_FACTOR, self.spec.min_rate_rps)
        return (low + high) / 2

    def record(self, rate_rps: float, measured: float) -> Probe:
        """Add the attainment measured at `rate_rps`; returns the probe with its verdict."""
        probe = Probe(
            index=len(self.probes),
            rate_rps=rate_rps,
            attainment=measured,
            passed=measured >= self.spec.slo.attainment,
        )
        self.probes.append(probe)
        return probe

    def result(self) -> SearchResult:
        low, high = self.bracket()
        bound = self._stop_reason() or "probe_limit"
        return SearchResult(low_rps=low, high_rps=high, bound=bound, probes=tuple(self.probes))
