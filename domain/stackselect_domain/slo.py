"""The SLO and its one verdict, used by prediction, measurement, search and the record alike.

An SLO names latency targets (TTFT, TPOT, E2E in milliseconds; None = no target), a
`percentile` and an `attainment` (docs/domain.md, "SLO"). Over a set of requests, `judge`
says whether the SLO holds:

- A request meets the SLO when it completed and every set target holds for it. A completed
  request whose metric is undefined (TPOT of a one-token output) cannot miss that target; a
  failed request misses every target.
- **attainment** is the share of all requests (failed ones included) meeting every target; it
  must reach `slo.attainment`.
- **percentile**: for each target, the share of all requests within that target must reach
  `percentile / 100`, which is what "the p-th percentile is within the target" means when
  failed requests count as infinitely slow.
- The SLO holds when both hold. `margin` is the smallest of the shortfalls (attainment minus
  its target, each metric's share minus the percentile): non-negative exactly when the SLO
  holds, and what max-rate interpolation works in.
- A targeted metric that no completed request measured makes the verdict unknowable (None).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stackselect_domain.checks import require_number

METRICS = ("ttft_ms", "tpot_ms", "e2e_ms")
DEFAULT_PERCENTILE = 99.0
DEFAULT_ATTAINMENT = 0.99
# A margin this close to zero counts as met: shares are ratios of counts, not measurements.
_MARGIN_EPSILON = 1e-12


@dataclass(frozen=True, slots=True)
class SLO:
    """Latency targets in milliseconds (None = no target) and how strictly they must hold."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    percentile: float = DEFAULT_PERCENTILE
    attainment: float = DEFAULT_ATTAINMENT

    def __post_init__(self) -> None:
        for name in METRICS:
            value = getattr(self, name)
            if value is not None:
                _finite(require_number(value, name, 0.0, strict=True), name)
        percentile = require_number(self.percentile, "percentile", 0.0, strict=True)
        if not percentile <= 100:
            raise ValueError(f"percentile must be in (0, 100], got {self.percentile}")
        attainment = require_number(self.attainment, "attainment", 0.0, strict=True)
        if not attainment <= 1:
            raise ValueError(f"attainment must be in (0, 1], got {self.attainment}")

    def targets(self) -> dict[str, float]:
        named = {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms}
        return {metric: float(target) for metric, target in named.items() if target is not None}

    def as_dict(self) -> dict[str, float | None]:
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "e2e_ms": self.e2e_ms,
            "percentile": self.percentile,
            "attainment": self.attainment,
        }

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "slo", need_target: bool = False) -> SLO:
        """Read the dict form (other keys are not the SLO's and are left alone); a missing or
        null percentile or attainment takes the default."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where} must be an object")
        values = {name: data.get(name) for name in METRICS}
        for name in ("percentile", "attainment"):
            if data.get(name) is not None:
                values[name] = data[name]
        try:
            slo = cls(**values)
        except ValueError as error:
            raise ValueError(f"{where}.{error}") from error
        if need_target and not slo.targets():
            raise ValueError(f"{where}: set at least one of the TTFT, TPOT and E2E targets")
        return slo

    def describe(self) -> str:
        """The SLO in words, as the record and the pages print it."""
        labels = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}
        parts = [f"{labels[name]} ≤ {target:g} ms" for name, target in self.targets().items()]
        targets = ", ".join(parts) if parts else "no latency target"
        return (
            f"{targets} at p{self.percentile:g}, "
            f"with {self.attainment:.0%} of requests meeting every target"
        )


def request_ms(ttft_ms: float, tpot_ms: float, osl: int) -> float:
    """A request's time in the system from its TTFT and TPOT: the first token, then one TPOT for
    every further token (TPOT is defined over the tokens after the first)."""
    return ttft_ms + tpot_ms * max(osl - 1, 0)


def requests_in_flight(rate_rps: float, request_s: float) -> int:
    """Requests an open loop at `rate_rps` keeps in the system when each stays `request_s`
    (Little's law), rounded up: a fraction of a request still needs its KV and a batch slot."""
    return max(1, math.ceil(rate_rps * request_s))


def _finite(value: float, name: str) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")


@dataclass(frozen=True, slots=True)
class SLOVerdict:
    """What `judge` found; every share is over all requests."""

    requests: int
    met: int
    attainment: float | None
    within: dict[str, float]
    margin: float | None

    @property
    def passed(self) -> bool | None:
        return None if self.margin is None else self.margin >= -_MARGIN_EPSILON

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "met": self.met,
            "attainment": self.attainment,
            "within": dict(self.within),
            "margin": self.margin,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SLOVerdict:
        return cls(
            requests=int(data["requests"]),
            met=int(data["met"]),
            attainment=data.get("attainment"),
            within={str(name): float(share) for name, share in data["within"].items()},
            margin=data.get("margin"),
        )


def _column(values: Sequence[float | None] | np.ndarray | None, size: int) -> np.ndarray:
    if values is None:
        return np.full(size, np.nan)
    column = np.asarray(
        [np.nan if value is None else value for value in values]
        if not isinstance(values, np.ndarray)
        else values,
        dtype=float,
    )
    if column.shape != (size,):
        raise ValueError(f"judge: every column needs {size} values, got {column.shape}")
    return column


def judge(
    slo: SLO,
    *,
    ok: Sequence[bool] | np.ndarray,
    ttft_ms: Sequence[float | None] | np.ndarray | None = None,
    tpot_ms: Sequence[float | None] | np.ndarray | None = None,
    e2e_ms: Sequence[float | None] | np.ndarray | None = None,
) -> SLOVerdict:
    """The verdict over one set of requests: `ok[i]` says request i completed; a metric column
    holds its milliseconds, None or NaN where undefined. Rules in the module docstring."""
    completed = np.asarray(ok, dtype=bool)
    size = completed.size
    columns = {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "e2e_ms": e2e_ms}
    if size == 0:
        return SLOVerdict(requests=0, met=0, attainment=None, within={}, margin=None)
    meets_all = completed.copy()
    within: dict[str, float] = {}
    unknowable = False
    for name, target in slo.targets().items():
        values = _column(columns[name], size)
        if completed.any() and np.isnan(values[completed]).all():
            unknowable = True
        with np.errstate(invalid="ignore"):
            meets = completed & (np.isnan(values) | (values <= target))
        within[name] = float(meets.sum()) / size
        meets_all &= meets
    return _verdict(slo, size, int(meets_all.sum()), within, unknowable=unknowable)


def _verdict(
    slo: SLO, requests: int, met: int, within: dict[str, float], *, unknowable: bool
) -> SLOVerdict:
    if unknowable:
        return SLOVerdict(requests=requests, met=met, attainment=None, within=within, margin=None)
    attainment = met / requests
    shortfalls = [attainment - slo.attainment]
    shortfalls += [share - slo.percentile / 100 for share in within.values()]
    return SLOVerdict(
        requests=requests, met=met, attainment=attainment, within=within, margin=min(shortfalls)
    )


def pooled(slo: SLO, verdicts: Sequence[SLOVerdict]) -> SLOVerdict:
    """The verdict over the union of several request sets (chunks of one load point).

    Counts add up exactly; an unknowable part makes the whole unknowable, which is the cautious
    reading (the part may hide requests that miss).
    """
    requests = sum(verdict.requests for verdict in verdicts)
    met = sum(verdict.met for verdict in verdicts)
    if requests == 0:
        return SLOVerdict(requests=0, met=0, attainment=None, within={}, margin=None)
    within = {
        name: sum(verdict.within.get(name, 0.0) * verdict.requests for verdict in verdicts)
        / requests
        for name in slo.targets()
    }
    unknowable = any(verdict.attainment is None for verdict in verdicts if verdict.requests)
    return _verdict(slo, requests, met, within, unknowable=unknowable)
