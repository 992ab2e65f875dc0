"""A plan's identity (docs/domain.md section 5), its fingerprint, load points and request schedule.

No database access: the caller passes the selection's documents in. Every candidate of a plan
runs the same requests (one seed, arrivals drawn at unit rate; a load point's rate divides
them), so the identity is everything that must not differ between two results to compare.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackselect_domain.canonical import canonical_hash
from stackselect_domain.slo import SLO
from stackselect_domain.speculative import Speculative
from stackselect_domain.tuning import check_sweep_values
from stackselect_domain.workload import (
    ClosedLoop,
    Workload,
    generate_requests,
)

from apps.benchmarks.choices import PlanMode, RunMode
from apps.selections.candidates.goal import open_loop_workload

IDENTITY_VERSION = 1
MAX_LOAD_POINTS = 16
MAX_REQUEST_COUNT = 20_000
WORKLOAD_KEYS = ("isl", "osl", "arrival", "prefix_share", "prefix_tokens", "prefix_groups")
# Default load ladder around the goal's load: half, the goal itself and twice it.
DEFAULT_LADDER = (0.5, 1.0, 2.0)
# A max-rate search stops once its bracket is this close (stackselect_domain/ratesearch.py).
SEARCH_TOLERANCE = 0.05
DEFAULT_MAX_PROBES = 8
# Greedy decoding, what vLLM's benchmark client sends unless told otherwise: the same request
# set then gives the same outputs, and a speculative plan's acceptance does not hang on an
# engine's default sampling. OpenAI-compatible servers take temperatures from 0 to 2.
GREEDY = 0.0
MAX_TEMPERATURE = 2.0
# What the failure-policy options do today, for the plan form and the API alike.
WINDOW_HELP = (
    "Recorded in the runs' identity; the runner sends every request of the schedule at each "
    "load point rather than stopping at this window."
)
ERROR_RATE_HELP = (
    "A load point whose share of failed requests is above this is flagged on the evidence page "
    "and in the API: its latency figures describe only the requests that completed."
)
ATTEMPTS_HELP = (
    "How many times a job is dispatched when its runner goes silent (its lease expires); a job "
    "whose runner reports a failure is not retried."
)
# The name of an evaluation command registered on a runner (the form and the API check it too).
EVALUATION_NAME = re.compile(r"^[A-Za-z0-9._-]{1,60}$")


class PlanOptionError(ValueError):
    """A plan option or load point refused; `field` is the form or API field it belongs to."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _refuse(where: str, problem: str) -> PlanOptionError:
    """ "where: problem", filed under the top-level field of `where` (load_points[2].rate_rps)."""
    return PlanOptionError(re.split(r"[.\[]", where, maxsplit=1)[0], f"{where}: {problem}")


@dataclass(frozen=True)
class PlanOptions:
    """What a person chooses when making a plan; the rest comes from the selection."""

    mode: str = PlanMode.FIXED
    run_mode: str = RunMode.MEASURED
    seed: int = 0
    request_count: int = 200
    load_points: tuple[Mapping[str, Any], ...] = ()
    warmup_requests: int = 4
    measurement_window_s: float = 120.0
    max_error_rate: float = 0.05
    max_attempts: int = 3
    request_timeout_s: float = 120.0
    endpoint: str = "completions"
    # What every request asks the engine to sample with. None: send nothing, so each engine
    # samples at its own default (plans made before the option existed); see GREEDY.
    temperature: float | None = GREEDY
    max_probes: int = DEFAULT_MAX_PROBES
    # Tuning: a sweep per candidate over `tuning_values` (plus the documented settings).
    tuning_sweep: bool = False
    tuning_values: Mapping[str, Any] | None = None
    # The output-quality probe, and a team's own evaluation command registered on the runner.
    quality_probe: bool = True
    evaluation: str = ""
    # Speculative decoding for every candidate (stackselect_domain.speculative); None: off.
    speculative: Speculative | None = None

    def __post_init__(self) -> None:
        if self.mode not in PlanMode.values:
            raise _refuse("mode", f"must be one of {', '.join(PlanMode.values)}")
        if self.run_mode not in RunMode.values:
            raise _refuse("run_mode", f"must be one of {', '.join(RunMode.values)}")
        _whole(self.seed, "seed", 0)
        _whole(self.request_count, "request_count", 1, MAX_REQUEST_COUNT)
        _whole(self.warmup_requests, "warmup_requests", 0, 1000)
        _whole(self.max_attempts, "max_attempts", 1, 10)
        _whole(self.max_probes, "max_probes", 1, MAX_LOAD_POINTS)
        if not self.measurement_window_s > 0:
            raise _refuse("measurement_window_s", "must be positive")
        if not 0 <= self.max_error_rate <= 1:
            raise _refuse("max_error_rate", "must be between 0 and 1")
        if not self.request_timeout_s > 0:
            raise _refuse("request_timeout_s", "must be positive")
        if self.endpoint not in ("completions", "chat"):
            raise _refuse("endpoint", "must be completions or chat")
        if self.temperature is not None and not (
            isinstance(self.temperature, int | float)
            and not isinstance(self.temperature, bool)
            and 0 <= self.temperature <= MAX_TEMPERATURE
        ):
            raise _refuse("temperature", f"must be a number from 0 to {MAX_TEMPERATURE}")
        if self.tuning_values:
            try:
                values = check_sweep_values(self.tuning_values)
            except ValueError as error:
                raise PlanOptionError("tuning_values", str(error)) from error
            object.__setattr__(self, "tuning_values", values)
        if self.evaluation and not EVALUATION_NAME.fullmatch(self.evaluation):
            raise _refuse("evaluation", "a name of letters, digits, '.', '_' or '-' (max 60)")
        self._check_speculative()

    def _check_speculative(self) -> None:
        if self.speculative is not None and self.run_mode == RunMode.SIMULATED:
            raise _refuse(
                "speculative",
                "the simulated engine does not model speculative decoding; "
                "plan a measured run, or a dry run without it",
            )


def _whole(value: Any, field: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(field, "must be a whole number")
    if value < minimum or (maximum is not None and value > maximum):
        limit = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise _refuse(field, f"must be {limit}, got {value}")
    return value


def plan_workload(workload: Mapping[str, Any]) -> Workload:
    """The selection's workload with an open-loop arrival, so rate load points always apply."""
    return open_loop_workload(
        Workload.from_dict({key: workload[key] for key in WORKLOAD_KEYS if key in workload})
    )


def _three_significant(value: float) -> float:
    return float(f"{value:.3g}")


def default_load_points(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Half, once and twice the goal's rate (or concurrency)."""
    arrival = Workload.from_dict(
        {key: workload[key] for key in WORKLOAD_KEYS if key in workload}
    ).arrival
    if isinstance(arrival, ClosedLoop):
        levels = sorted({max(1, math.ceil(arrival.concurrency * f)) for f in DEFAULT_LADDER})
        return [{"concurrency": level} for level in levels]
    rates = sorted({_three_significant(arrival.rate_rps * f) for f in DEFAULT_LADDER})
    return [{"rate_rps": rate} for rate in rates]


def normalise_load_points(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validate and index load points; each has exactly one of rate_rps or concurrency."""
    if not points:
        raise _refuse("load_points", "give at least one load point")
    if len(points) > MAX_LOAD_POINTS:
        raise _refuse("load_points", f"at most {MAX_LOAD_POINTS}")
    normalised = []
    for index, point in enumerate(points):
        where = f"load_points[{index}]"
        if not isinstance(point, Mapping) or ("rate_rps" in point) == ("concurrency" in point):
            raise _refuse(where, "needs exactly one of rate_rps or concurrency")
        if "rate_rps" in point:
            rate = point["rate_rps"]
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
                raise _refuse(f"{where}.rate_rps", "must be a positive number")
            if not math.isfinite(rate):
                raise _refuse(f"{where}.rate_rps", "must be finite")
            normalised.append({"index": index, "rate_rps": float(rate)})
        else:
            concurrency = _whole(point["concurrency"], f"{where}.concurrency", 1, 100_000)
            normalised.append({"index": index, "concurrency": concurrency})
    return normalised


def request_schedule(workload: Workload, *, count: int, seed: int) -> list[dict[str, Any]]:
    """The fixed-seed requests at unit rate, in the job spec's shape."""
    return [
        {
            "index": request.index,
            "arrival_s": round(request.arrival_s, 6),
            "input_tokens": request.input_tokens,
            "output_tokens": request.output_tokens,
            "prefix_group": request.prefix_group,
        }
        for request in generate_requests(workload, count, seed, rate_rps=1.0)
    ]


def search_slo(slo: Mapping[str, Any]) -> dict[str, Any]:
    """The selection's SLO with its defaults filled in; a search needs a latency target."""
    try:
        return SLO.from_dict(slo, need_target=True).as_dict()
    except ValueError as error:
        raise PlanOptionError("slo", str(error)) from error


def search_section(
    mode: str,
    slo: Mapping[str, Any],
    load_points: Sequence[Mapping[str, Any]],
    *,
    max_probes: int,
    requests_per_probe: int,
) -> dict[str, Any] | None:
    """For a max-rate search: the SLO and the range its rate load points span.

    The runner starts at the geometric middle of the range (the goal's rate for the default
    half / once / twice ladder) and never probes outside it.
    """
    if mode != PlanMode.MAX_RATE_SEARCH:
        return None
    if any("rate_rps" not in point for point in load_points):
        raise _refuse("load_points", "a max-rate search takes rates, not concurrencies")
    rates = sorted({point["rate_rps"] for point in load_points})
    if len(rates) < 2:
        raise _refuse(
            "load_points", "a max-rate search needs two different rates to search between"
        )
    low, high = rates[0], rates[-1]
    start = min(max(_three_significant(math.sqrt(low * high)), low), high)
    return {
        "slo": search_slo(slo),
        "start_rate_rps": start,
        "min_rate_rps": low,
        "max_rate_rps": high,
        "tolerance": SEARCH_TOLERANCE,
        "max_probes": max_probes,
        "requests_per_probe": requests_per_probe,
    }


def build_identity(
    *,
    model: Mapping[str, Any],
    precision: str,
    kv_dtype: str,
    workload: Mapping[str, Any],
    options: PlanOptions,
    load_points: Sequence[Mapping[str, Any]],
    search: Mapping[str, Any] | None,
    simulated: bool,
) -> dict[str, Any]:
    """Everything two results must share to compare, as one JSON document.

    Speculative decoding changes what is measured, so a plan that uses it carries it (a plan
    without it has no such key, so its fingerprint is what it was before the option existed).
    """
    identity = {
        "version": IDENTITY_VERSION,
        "simulated": simulated,
        "model": dict(model),
        "precision": precision,
        "kv_dtype": kv_dtype,
        "workload": {
            **{key: workload[key] for key in WORKLOAD_KEYS if key in workload},
            "seed": options.seed,
            "request_count": options.request_count,
        },
        "mode": options.mode,
        "load_points": [dict(point) for point in load_points],
        "search": dict(search) if search else None,
        "harness": {
            "endpoint": options.endpoint,
            "ignore_eos": True,
            "warmup_requests": options.warmup_requests,
            "timeout_s": options.request_timeout_s,
            **({} if options.temperature is None else {"temperature": options.temperature}),
        },
        "measurement_window_s": options.measurement_window_s,
        "failure_policy": {
            "max_error_rate": options.max_error_rate,
            "max_attempts": options.max_attempts,
        },
    }
    if options.speculative is not None:
        identity["speculative"] = options.speculative.as_dict()
    return identity


def identity_fingerprint(identity: Mapping[str, Any]) -> str:
    return canonical_hash(identity)
