"""Searching for the highest request rate that meets the SLO, and reading it off load points.

`RateSearch` brackets the answer and bisects it, so engine (or simulator) time goes only to
rates near the answer:

1. Probe `start_rate_rps`.
2. Bracket: while every probe passed, double the highest passing rate (capped at
   `max_rate_rps`); while every probe failed, halve the lowest failing rate (floored at
   `min_rate_rps`).
3. Bisect: probe the middle of [highest pass below the lowest fail, lowest fail] until
   (high - low) <= tolerance * high.

The answer is the highest passing rate of the final bracket: a rate that was measured to pass,
and within `tolerance` of the true crossing when the SLO margin falls with the rate. The search
ends early at `max_rate_rps` when it passes (the answer is "at least" that rate), at
`min_rate_rps` when it fails (below the range) or after `max_probes` probes. A probe passes
when `stackselect_domain.slo.judge` says the SLO holds there, percentile included.

`max_rate_between` reads the same answer off a finished sweep of load points. The runner drives
`RateSearch` against an engine (the server's simulator bisects stationary runs instead, in
apps/selections/steady_state.py); the evidence analysis uses `max_rate_between`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from stackselect_domain.checks import require_int, require_number
from stackselect_domain.slo import SLO, SLOVerdict

GROWTH_FACTOR = 2.0
DEFAULT_TOLERANCE = 0.05

SearchBound = Literal["bracketed", "at_least", "below_range", "probe_limit"]


@dataclass(frozen=True, slots=True)
class SearchSpec:
    """The job spec's `search` section (docs/runner-protocol.md)."""

    slo: SLO
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
            slo=SLO.from_dict(data["slo"], where="search.slo", need_target=True),
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
    margin: float
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

    def record(self, rate_rps: float, verdict: SLOVerdict) -> Probe:
        """Add the verdict measured at `rate_rps`; an unknowable one is refused."""
        if verdict.attainment is None or verdict.margin is None:
            raise ValueError(
                f"{rate_rps:g} req/s: the SLO verdict is unknowable (no completed request "
                "measured every targeted latency)"
            )
        probe = Probe(
            index=len(self.probes),
            rate_rps=rate_rps,
            attainment=verdict.attainment,
            margin=verdict.margin,
            passed=bool(verdict.passed),
        )
        self.probes.append(probe)
        return probe

    def result(self) -> SearchResult:
        low, high = self.bracket()
        bound = self._stop_reason() or "probe_limit"
        return SearchResult(low_rps=low, high_rps=high, bound=bound, probes=tuple(self.probes))


@dataclass(frozen=True, slots=True)
class MaxRate:
    """The highest request rate that meets the SLO on a sweep, and how it was found.

    Rule: load points are sorted by rate; the answer lies between the last passing point and
    the FIRST failing one, interpolated linearly in the SLO margin (where it crosses zero).
    Points above the first failure are ignored (a pass there is noise, not capacity). `bound`
    says when the sweep does not bracket the answer: "below_range" (even the lowest rate
    fails, rate None) or "at_least" (every rate passes; the highest one is a lower bound).
    """

    rate_rps: float | None
    bound: Literal["interpolated", "below_range", "at_least"]


def max_rate_between(points: Sequence[tuple[float, float]]) -> MaxRate:
    """`points` are (request rate, SLO margin) pairs, a margin >= 0 meaning the SLO held."""
    if not points:
        raise ValueError("points: at least one (rate, margin) pair is needed")
    ordered = sorted(points)
    failing = next((i for i, (_, margin) in enumerate(ordered) if margin < 0), None)
    if failing is None:
        return MaxRate(ordered[-1][0], "at_least")
    if failing == 0:
        return MaxRate(None, "below_range")
    (rate_pass, margin_pass), (rate_fail, margin_fail) = ordered[failing - 1], ordered[failing]
    fraction = margin_pass / (margin_pass - margin_fail)
    return MaxRate(rate_pass + fraction * (rate_fail - rate_pass), "interpolated")
