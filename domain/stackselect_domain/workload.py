"""Workload description and fixed-seed request generation for the simulator and the load harness.

A workload is input and output length distributions, an arrival process and prefix sharing. The
same seed always yields the same requests, and an open-loop process draws its gaps at a unit rate
first, so the arrivals for any other rate are the same draw divided by the rate: a rate search
then compares loads on identical request sets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

Rng = np.random.Generator


class WorkloadError(ValueError):
    """A workload document or trace refused; the message starts with the path of the bad key
    ("isl.kind: ..."). `field` is the document's own field in a form or API. A caller's bad
    argument (a negative request count) stays a plain ValueError."""

    field = "workload"


# The most tokens one prompt or answer may have: far past any model's context, and a bound on
# what a document or a trace can ask the simulator to hold (the API's fields share it). A
# distribution without a stated maximum is clipped here.
MAX_TOKENS = 10_000_000
# The widest lognormal length: its 99th percentile is already about 1,000x its median, and a
# much wider one overflows its own mean.
MAX_SIGMA = 3.0


def _number(
    data: Mapping[str, Any],
    key: str,
    where: str,
    *,
    minimum: float = 0.0,
    maximum: float = math.inf,
) -> float:
    """Read a finite number in [minimum, maximum], naming the field in the error."""
    if key not in data:
        raise WorkloadError(f"{where}.{key}: is required")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"{where}.{key}: must be a finite number, got {value!r}")
    if value < minimum:
        raise WorkloadError(f"{where}.{key}: must be >= {minimum}, got {value!r}")
    if value > maximum:
        raise WorkloadError(f"{where}.{key}: must be <= {maximum}, got {value!r}")
    return float(value)


def _numbers(data: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    values = data.get(key)
    if not isinstance(values, list | tuple) or not values:
        raise WorkloadError(f"{where}.{key}: must be a non-empty list of numbers")
    return tuple(_number({key: value}, key, where) for value in values)


def _tokens(data: Mapping[str, Any], key: str, where: str) -> float:
    return _number(data, key, where, minimum=1, maximum=MAX_TOKENS)


def _bounds(data: Mapping[str, Any], where: str) -> tuple[float, float]:
    low = _tokens(data, "min", where) if "min" in data else 1.0
    high = _tokens(data, "max", where) if "max" in data else float(MAX_TOKENS)
    if high < low:
        raise WorkloadError(f"{where}.max: must be >= min")
    return low, high


def _to_tokens(samples: np.ndarray, low: float, high: float) -> np.ndarray:
    return np.rint(np.clip(samples, low, high)).astype(np.int64).clip(min=1)


def _below(z: float) -> float:
    """The standard normal's probability below z."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _density(z: float) -> float:
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi) if math.isfinite(z) else 0.0


def _clipped_tails(low: float, high: float, below_low: float, above_high: float) -> float:
    """What the values clipped to a bound add to the mean (a bound at infinity holds none)."""
    return low * below_low + (high * above_high if above_high > 0 else 0.0)


# ---------------------------------------------------------------- lengths


class LengthDistribution(Protocol):
    def sample(self, rng: Rng, n: int) -> np.ndarray: ...

    def mean(self) -> float: ...


@dataclass(frozen=True)
class FixedLength:
    value: int

    def sample(self, rng: Rng, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    def mean(self) -> float:
        return float(self.value)


@dataclass(frozen=True)
class NormalLength:
    """Normal lengths clipped to [min, max] and rounded."""

    mean_tokens: float
    std: float
    low: float = 1.0
    high: float = float(MAX_TOKENS)

    def sample(self, rng: Rng, n: int) -> np.ndarray:
        return _to_tokens(rng.normal(self.mean_tokens, self.std, n), self.low, self.high)

    def mean(self) -> float:
        """The mean of the clipped lengths the requests get, not of the normal before clipping
        (a wide spread clipped at one token raises it)."""
        m, s = self.mean_tokens, self.std
        if s == 0:
            return min(max(m, self.low), self.high)
        a, b = (self.low - m) / s, (self.high - m) / s
        inside = m * (_below(b) - _below(a)) + s * (_density(a) - _density(b))
        return inside + _clipped_tails(self.low, self.high, _below(a), 1 - _below(b))


@dataclass(frozen=True)
class LognormalLength:
    """Lognormal lengths given by their median (exp of mu) and sigma of the underlying normal.

    The median is what people read off a length histogram; the mean is median * exp(sigma^2/2).
    """

    median: float
    sigma: float
    low: float = 1.0
    high: float = float(MAX_TOKENS)

    def sample(self, rng: Rng, n: int) -> np.ndarray:
        samples = rng.lognormal(math.log(self.median), self.sigma, n)
        return _to_tokens(samples, self.low, self.high)

    def mean(self) -> float:
        """The mean of the clipped lengths: median * exp(sigma^2 / 2) without bounds, less
        where a stated maximum cuts the long tail."""
        s = self.sigma
        if s == 0:
            return min(max(self.median, self.low), self.high)
        a = (math.log(self.low) - math.log(self.median)) / s
        b = (math.log(self.high) - math.log(self.median)) / s
        inside = self.median * math.exp(s * s / 2) * (_below(b - s) - _below(a - s))
        return inside + _clipped_tails(self.low, self.high, _below(a), 1 - _below(b))


@dataclass(frozen=True)
class EmpiricalLength:
    """Lengths resampled uniformly, with replacement, from observed values."""

    values: tuple[int, ...]

    def sample(self, rng: Rng, n: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=n, replace=True)

    def mean(self) -> float:
        return float(np.mean(self.values))


def replay_rows(rows: int, n: int) -> np.ndarray:
    """The trace row each of n replayed requests copies.

    Every row once, then rows 1.. again: a repeat's first gap is the trace's first gap, so a
    replayed length stays paired with the gap that preceded it in the trace.
    """
    if rows < 1:
        raise ValueError("rows: a replay needs at least one row")
    index = np.arange(n, dtype=np.int64)
    if rows == 1:
        return np.zeros(n, dtype=np.int64)
    return np.where(index < rows, index, 1 + (index - 1) % (rows - 1))


@dataclass(frozen=True)
class ReplayedLength:
    """A trace's own lengths in its order (request i takes row replay_rows(...)[i]).

    Unlike EmpiricalLength it draws nothing: with a trace's arrivals it replays the trace.
    """

    values: tuple[int, ...]

    def sample(self, rng: Rng, n: int) -> np.ndarray:
        return np.asarray(self.values, dtype=np.int64)[replay_rows(len(self.values), n)]

    def mean(self) -> float:
        return float(np.mean(self.values))


def parse_length(data: Mapping[str, Any], where: str = "length") -> LengthDistribution:
    """Build a length distribution from its dict form, e.g. {"kind": "fixed", "value": 512}."""
    if not isinstance(data, Mapping):
        raise WorkloadError(f"{where}: must be an object with a 'kind'")
    kind = data.get("kind")
    if kind == "fixed":
        return FixedLength(int(_tokens(data, "value", where)))
    if kind == "normal":
        low, high = _bounds(data, where)
        mean = _tokens(data, "mean", where)
        return NormalLength(mean, _number(data, "std", where, maximum=MAX_TOKENS), low, high)
    if kind == "lognormal":
        low, high = _bounds(data, where)
        median = _tokens(data, "median", where)
        sigma = _number(data, "sigma", where, maximum=MAX_SIGMA)
        return LognormalLength(median, sigma, low, high)
    if kind in ("empirical", "replay"):
        values = _numbers(data, "values", where)
        if min(values) < 1 or max(values) > MAX_TOKENS:
            raise WorkloadError(f"{where}.values: lengths must be between 1 and {MAX_TOKENS}")
        lengths = tuple(round(v) for v in values)
        return EmpiricalLength(lengths) if kind == "empirical" else ReplayedLength(lengths)
    raise WorkloadError(
        f"{where}.kind: must be fixed, normal, lognormal, empirical or replay, got {kind!r}"
    )


# ---------------------------------------------------------------- arrivals


@dataclass(frozen=True)
class OpenLoopArrivals:
    """Requests arrive on their own schedule, regardless of how fast the server answers.

    `unit_rate_gaps` draws n inter-arrival gaps with mean 1 s (the process at 1 request/s);
    arrival times at rate r are their cumulative sum divided by r, the first request at 0.
    """

    process: str
    rate_rps: float
    burstiness: float = 1.0
    trace_gaps: tuple[float, ...] = ()

    def unit_rate_gaps(self, rng: Rng, n: int) -> np.ndarray:
        if self.process == "poisson":
            return rng.exponential(1.0, n)
        if self.process == "gamma":
            # Gamma(shape k, scale 1/k) keeps mean 1; the gaps' CV is 1/sqrt(k).
            return rng.gamma(self.burstiness, 1.0 / self.burstiness, n)
        if self.process == "constant":
            return np.ones(n)
        # Cycling the gaps replays rows 0.., then 1.. again: the order of `replay_rows`.
        gaps = np.asarray(self.trace_gaps)
        return np.resize(gaps / gaps.mean(), n)

    def arrival_times(self, rng: Rng, n: int, rate_rps: float | None = None) -> np.ndarray:
        rate = self.rate_rps if rate_rps is None else rate_rps
        if not rate > 0:
            raise ValueError(f"rate_rps: must be positive, got {rate!r}")
        gaps = self.unit_rate_gaps(rng, n)
        times = np.concatenate(([0.0], np.cumsum(gaps[:-1]))) if n else np.zeros(0)
        return times / rate


@dataclass(frozen=True)
class ClosedLoop:
    """`concurrency` clients, each sending its next request when the previous one finishes."""

    concurrency: int


ArrivalProcess = OpenLoopArrivals | ClosedLoop


def parse_arrival(data: Mapping[str, Any], where: str = "arrival") -> ArrivalProcess:
    """Build an arrival process from its dict form, e.g. {"process": "poisson", "rate_rps": 5}.

    A trace replays its timestamps' gaps (cycled when more requests are asked for); its nominal
    rate is the trace's mean rate times `speedup` (default 1), and any other rate compresses or
    stretches the trace the same way.
    """
    if not isinstance(data, Mapping):
        raise WorkloadError(f"{where}: must be an object")
    if "concurrency" in data:
        concurrency = _number(data, "concurrency", where, minimum=1)
        if concurrency != int(concurrency):
            raise WorkloadError(f"{where}.concurrency: must be a whole number")
        return ClosedLoop(int(concurrency))
    process = data.get("process")
    if process in ("poisson", "constant"):
        return OpenLoopArrivals(process, _positive(data, "rate_rps", where))
    if process == "gamma":
        burstiness = _positive(data, "burstiness", where)
        return OpenLoopArrivals(process, _positive(data, "rate_rps", where), burstiness)
    if process == "trace":
        stamps = _numbers(data, "timestamps", where)
        gaps = np.diff(np.asarray(stamps))
        if len(stamps) < 2 or np.any(gaps < 0) or stamps[-1] == stamps[0]:
            raise WorkloadError(f"{where}.timestamps: need 2+ non-decreasing times spanning > 0 s")
        speedup = _positive(data, "speedup", where) if "speedup" in data else 1.0
        rate = speedup * (len(stamps) - 1) / (stamps[-1] - stamps[0])
        return OpenLoopArrivals(process, rate, trace_gaps=tuple(float(g) for g in gaps))
    raise WorkloadError(
        f"{where}.process: must be poisson, gamma, constant or trace (or give concurrency), "
        f"got {process!r}"
    )


def _positive(data: Mapping[str, Any], key: str, where: str) -> float:
    value = _number(data, key, where)
    if value <= 0:
        raise WorkloadError(f"{where}.{key}: must be positive")
    return value


# ---------------------------------------------------------------- workload and requests


@dataclass(frozen=True)
class Workload:
    """ISL/OSL distributions, the arrival process and prefix sharing.

    prefix_share of the requests start with one of prefix_groups shared prefixes (system prompts,
    RAG preambles) of prefix_tokens tokens each.
    """

    input_length: LengthDistribution
    output_length: LengthDistribution
    arrival: ArrivalProcess
    prefix_share: float = 0.0
    prefix_tokens: int = 0
    prefix_groups: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.prefix_share <= 1:
            raise WorkloadError("prefix_share: must be between 0 and 1")
        if self.prefix_tokens < 0:
            raise WorkloadError("prefix_tokens: must not be negative")
        if self.prefix_share > 0 and self.prefix_tokens < 1:
            raise WorkloadError("prefix_tokens: must be positive when prefix_share > 0")
        if self.prefix_groups < 1:
            raise WorkloadError("prefix_groups: must be at least 1")
        gaps = len(self.arrival.trace_gaps) if isinstance(self.arrival, OpenLoopArrivals) else 0
        for name, length in (("isl", self.input_length), ("osl", self.output_length)):
            if isinstance(length, ReplayedLength) and gaps and len(length.values) != gaps + 1:
                raise WorkloadError(f"{name}.values: a replay needs one length per trace timestamp")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Workload:
        """Keys: isl, osl (length dicts), arrival, and optional prefix_share, prefix_tokens,
        prefix_groups."""
        if not isinstance(data, Mapping):
            raise WorkloadError("workload: must be an object")
        for key in ("isl", "osl", "arrival"):
            if key not in data:
                raise WorkloadError(f"{key}: is required")

        def optional(key: str, default: float) -> float:
            return _number(data, key, "workload") if key in data else default

        return cls(
            input_length=parse_length(data["isl"], "isl"),
            output_length=parse_length(data["osl"], "osl"),
            arrival=parse_arrival(data["arrival"]),
            prefix_share=optional("prefix_share", 0.0),
            prefix_tokens=int(optional("prefix_tokens", 0)),
            prefix_groups=int(optional("prefix_groups", 1)),
        )


@dataclass(frozen=True)
class Request:
    """One generated request. Closed-loop requests carry arrival_s = 0: the simulator sets it."""

    index: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_group: int | None = None
    prefix_tokens: int = 0


def generate_requests(
    workload: Workload, n: int, seed: int, *, rate_rps: float | None = None
) -> list[Request]:
    """n requests drawn with numpy's default_rng(seed); rate_rps overrides an open-loop rate.

    The draws happen in a fixed order (lengths, then gaps, then prefixes), all independent of
    the rate, so only arrival times differ between rates for one seed.
    """
    if n < 0:
        raise ValueError("n: must not be negative")
    rng = np.random.default_rng(seed)
    inputs = workload.input_length.sample(rng, n)
    outputs = workload.output_length.sample(rng, n)
    if isinstance(workload.arrival, ClosedLoop):
        if rate_rps is not None:
            raise ValueError("rate_rps: a closed-loop workload has no arrival rate")
        arrivals = np.zeros(n)
    else:
        arrivals = workload.arrival.arrival_times(rng, n, rate_rps)
    shared = rng.random(n) < workload.prefix_share
    groups = rng.integers(0, workload.prefix_groups, n)
    requests = []
    for i in range(n):
        prefix = workload.prefix_tokens if shared[i] else 0
        requests.append(
            Request(
                index=i,
                arrival_s=float(arrivals[i]),
                input_tokens=max(int(inputs[i]), prefix),
                output_tokens=int(outputs[i]),
                prefix_group=int(groups[i]) if shared[i] else None,
                prefix_tokens=prefix,
            )
        )
    return requests


# ---------------------------------------------------------------- traces


@dataclass(frozen=True)
class TraceSummary:
    """What an uploaded trace says about the workload.

    burstiness_cv is the coefficient of variation of the inter-arrival gaps (1 for Poisson,
    above 1 burstier); gamma_shape = 1 / cv^2 is the matching gamma process shape.
    prefix_share is the share of requests whose prefix_id occurs on two or more rows.
    timestamps count from the first request, so a trace logged with negative or clock times
    replays the same gaps.
    """

    requests: int
    duration_s: float
    mean_rate_rps: float
    burstiness_cv: float
    gamma_shape: float | None
    isl_mean: float
    osl_mean: float
    prefix_share: float
    input_lengths: tuple[int, ...] = field(repr=False)
    output_lengths: tuple[int, ...] = field(repr=False)
    timestamps: tuple[float, ...] = field(repr=False)

    def replay_document(self, speedup: float = 1.0) -> dict[str, Any]:
        """The workload keys that replay this trace: its timestamps, and each request's own
        lengths in timestamp order."""
        return {
            "isl": {"kind": "replay", "values": list(self.input_lengths)},
            "osl": {"kind": "replay", "values": list(self.output_lengths)},
            "arrival": {
                "process": "trace",
                "timestamps": list(self.timestamps),
                "speedup": speedup,
            },
        }

    def to_workload(self) -> Workload:
        """A replay workload: the trace's own arrival gaps and lengths, request by request."""
        return Workload.from_dict(self.replay_document())


_TRACE_COLUMNS = ("timestamp", "input_tokens", "output_tokens", "prefix_id")


def _trace_row(row: Mapping[str, Any] | Sequence[Any], number: int) -> dict[str, Any]:
    if isinstance(row, Mapping):
        values = dict(row)
    elif isinstance(row, Sequence) and not isinstance(row, str) and 3 <= len(row) <= 4:
        values = dict(zip(_TRACE_COLUMNS, row, strict=False))
    else:
        raise WorkloadError(
            f"rows[{number}]: must be a mapping or (timestamp, isl, osl[, prefix_id])"
        )
    where = f"rows[{number}]"
    return {
        "timestamp": _number(values, "timestamp", where, minimum=-math.inf),
        "input_tokens": int(_tokens(values, "input_tokens", where)),
        "output_tokens": int(_tokens(values, "output_tokens", where)),
        "prefix_id": values.get("prefix_id") or None,
    }


def trace_summary(rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> TraceSummary:
    """Summarise trace rows of timestamp (s), input_tokens, output_tokens and optional prefix_id.

    Rows may come in any order; they are sorted by timestamp.
    """
    parsed = sorted(
        (_trace_row(row, number) for number, row in enumerate(rows)), key=lambda r: r["timestamp"]
    )
    if len(parsed) < 2:
        raise WorkloadError("rows: a trace needs at least two requests")
    stamps = np.array([r["timestamp"] for r in parsed])
    duration = float(stamps[-1] - stamps[0])
    if duration <= 0:
        raise WorkloadError("rows: timestamps must span more than zero seconds")
    gaps = np.diff(stamps)
    cv = float(np.std(gaps) / np.mean(gaps))
    prefix_ids = [r["prefix_id"] for r in parsed if r["prefix_id"] is not None]
    counts: dict[Any, int] = {}
    for prefix_id in prefix_ids:
        counts[prefix_id] = counts.get(prefix_id, 0) + 1
    shared = sum(count for count in counts.values() if count >= 2)
    inputs = tuple(r["input_tokens"] for r in parsed)
    outputs = tuple(r["output_tokens"] for r in parsed)
    return TraceSummary(
        requests=len(parsed),
        duration_s=duration,
        mean_rate_rps=(len(parsed) - 1) / duration,
        burstiness_cv=cv,
        gamma_shape=1 / cv**2 if cv > 0 else None,
        isl_mean=float(np.mean(inputs)),
        osl_mean=float(np.mean(outputs)),
        prefix_share=shared / len(parsed),
        input_lengths=inputs,
        output_lengths=outputs,
        timestamps=tuple(float(s - stamps[0]) for s in stamps),
    )
