"""Calibrating a step-time provider on published measurements, never on held-out rows.

A base method (the roofline or AIConfigurator) gets three factors per engine:
- `prefill` scales steps that compute prompt tokens;
- `rounds` is how many requests per client the benchmark ran. Its clients start together, so
  the first round's prompts queue behind each other, and the mean TTFT it reports is that queue
  amortised over its rounds (closedloop.FixedConcurrencyPrediction.over_rounds); the sample
  does not state its run length, so it is fitted;
- `ttft_overhead_ms` is a fixed time every request spends before its first token outside the
  engine's steps (HTTP, tokenising, scheduling, streaming the token back); kernel timings and
  the roofline leave it out, and at low concurrency it is most of a short prompt's TTFT.
Factors are per engine, not per engine and system: in a screening fit on training rows with
a quarter of their groups left out in turn, per-system factors predicted the left-out groups
worse (the roofline 40% -> 52% TTFT MdAPE, AIConfigurator 36% -> 40%). TPOT is the base method's
own prediction: on training rows split by group, a fitted decode factor made TPOT worse for both
bases (AIConfigurator 14.9% -> 23-27% MdAPE).
They are fitted on the published rows that are not held out; a row of the held-out split
(apps/catalog/published_sample.held_out) is skipped before any arithmetic, so perturbing one
cannot move a factor (tests/selections/test_published_calibration.py checks that).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from stackselect_domain.closedloop import FixedConcurrencyPrediction
from stackselect_domain.steptime import METHOD_CALIBRATED, StepBatch, StepTimeProvider

from apps.selections.aiconfigurator_provider import BACKENDS, SYSTEMS
from apps.selections.published_predict import RowContext, predict_row, simulate_row

FACTORS_FILE = Path(__file__).parent / "data" / "published_factors.json"

ROUND_CHOICES = (1, 2, 3, 5, 10, 20, 40)
OVERHEAD_CHOICES_MS = (0.0, 10.0, 20.0, 40.0, 80.0, 120.0, 160.0, 240.0, 320.0, 480.0, 640.0, 960.0)
# Multipliers of the prompt factor tried between simulations, reading TTFT as proportional to it.
PREFILL_STEPS = tuple(0.25 * 1.25**k for k in range(20))
LOG_CAP = math.log(4)
ITERATIONS = 3  # simulations per row and key: two prompt-factor updates, then a final pick
MIN_ROWS = 8  # fewer fitting rows for an engine: use the overall factors
MAX_ROWS_PER_KEY = 100  # fitting rows per key, spread over the key's rows in a fixed order


@dataclass(frozen=True)
class StepFactors:
    prefill: float = 1.0
    rounds: int = 1
    ttft_overhead_ms: float = 0.0
    rows: int = 0


@dataclass(frozen=True, eq=False)
class CalibratedStepTime:
    """A base provider with fitted factors; its figures are of method "calibrated"."""

    base: StepTimeProvider
    factors: StepFactors
    method: str = METHOD_CALIBRATED

    def step_seconds(self, batch: StepBatch) -> float:
        factor = self.factors.prefill if batch.prefill_tokens else 1.0
        return self.base.step_seconds(batch) * factor


@dataclass(frozen=True)
class Sample:
    """A published row with the base method's provider for it."""

    context: RowContext
    provider: StepTimeProvider


@dataclass
class Calibration:
    """Factors per engine and overall (and per engine and system if a file holds them), most
    specific first."""

    method: str
    factors: dict[tuple[str, ...], StepFactors] = field(default_factory=dict)

    def factors_for(self, engine: str, system: str) -> StepFactors:
        for key in ((engine, system), (engine,), ()):
            if key in self.factors:
                return self.factors[key]
        return StepFactors()

    def as_dict(self) -> dict:
        return {"|".join(key): asdict(value) for key, value in sorted(self.factors.items())}

    @classmethod
    def from_dict(cls, method: str, data: dict) -> Calibration:
        factors = {
            tuple(key.split("|")) if key else (): StepFactors(**value)
            for key, value in data.items()
        }
        return cls(method=method, factors=factors)

    def predict(self, sample: Sample) -> FixedConcurrencyPrediction:
        row = sample.context.row
        return _predicted(sample, self.factors_for(row.backend, row.system))


def _ttft_pairs(
    samples: Sequence[Sample], simulated: Sequence[FixedConcurrencyPrediction], rounds: int
) -> list[tuple[float, float]]:
    """(predicted, measured) TTFT over a run of `rounds` rounds."""
    return [
        (prediction.over_rounds(rounds).ttft_ms, sample.context.row.ttft_ms)
        for sample, prediction in zip(samples, simulated, strict=True)
    ]


def _log_error(pairs: Sequence[tuple[float, float]]) -> float:
    """Mean absolute log ratio, each capped at a factor of 4: smoother than the median, so the
    fitted factors do not jump between flat optima, and a row the loop cannot represent (a
    run whose KV cache overflowed, TTFT 100x) weighs no more than a factor of 4."""
    return statistics.fmean(min(abs(math.log(p / m)), LOG_CAP) for p, m in pairs)


def _best(
    samples: Sequence[Sample], simulated: Sequence, steps: Sequence[float]
) -> tuple[float, int, float]:
    """(prompt multiplier, rounds, overhead) with the smallest TTFT error."""
    best: tuple[float, tuple[float, int, float]] | None = None
    for rounds in ROUND_CHOICES:
        ttft = _ttft_pairs(samples, simulated, rounds)
        for step in steps:
            for overhead in OVERHEAD_CHOICES_MS:
                scaled = [(step * predicted + overhead, measured) for predicted, measured in ttft]
                score = _log_error(scaled)
                if best is None or score < best[0]:
                    best = (score, (step, rounds, overhead))
    assert best is not None
    return best[1]


def _fit_key(samples: Sequence[Sample]) -> StepFactors:
    """Simulate at the current prompt factor, pick the multiplier, rounds and overhead that fit
    TTFT best (read as proportional to the factor), and again; the last pass only picks."""
    factors = StepFactors(rows=len(samples))
    for iteration in range(ITERATIONS):
        simulated = [_simulated(sample, factors.prefill) for sample in samples]
        last = iteration == ITERATIONS - 1
        step, rounds, overhead = _best(samples, simulated, (1.0,) if last else PREFILL_STEPS)
        factors = StepFactors(factors.prefill * step, rounds, overhead, len(samples))
    return factors


def _simulated(sample: Sample, prefill: float) -> FixedConcurrencyPrediction:
    provider = CalibratedStepTime(sample.provider, StepFactors(prefill=prefill))
    return simulate_row(provider, sample.context)


def _predicted(sample: Sample, factors: StepFactors) -> FixedConcurrencyPrediction:
    """TTFT from the calibrated steps over the fitted rounds plus the overhead; TPOT is the base
    method's own prediction (the rounds and factors are fitted on TTFT; the prompt factor would
    otherwise drag TPOT along through mixed steps)."""
    ttft = _simulated(sample, factors.prefill).over_rounds(factors.rounds).ttft_ms
    base = predict_row(sample.provider, sample.context)
    return replace(base, ttft_ms=ttft + factors.ttft_overhead_ms, method=METHOD_CALIBRATED)


def _spread(samples: list[Sample]) -> list[Sample]:
    """At most MAX_ROWS_PER_KEY rows, taken evenly from the key's rows sorted by source id."""
    ordered = sorted(samples, key=lambda sample: sample.context.row.key)
    stride = max(1, len(ordered) // MAX_ROWS_PER_KEY)
    return ordered[::stride][:MAX_ROWS_PER_KEY]


def fit_calibration(
    method: str,
    samples: Sequence[Sample],
    *,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Fit factors for one base method on the samples that are not held out."""
    fitting = [s for s in samples if not s.context.row.held_out]
    if not fitting:
        raise ValueError("samples: no published row outside the held-out split to fit on")
    keyed: dict[tuple[str, ...], list[Sample]] = defaultdict(list)
    for sample in fitting:
        row = sample.context.row
        for key in ((row.backend,), ()):
            keyed[key].append(sample)
    calibration = Calibration(method=method)
    for key, members in sorted(keyed.items()):
        if len(members) < MIN_ROWS and key:
            continue
        calibration.factors[key] = _fit_key(_spread(members))
        if progress:
            progress(f"fitted {method} {'/'.join(key) or 'overall'} on {len(members)} rows")
    return calibration


def write_calibrations(calibrations: Sequence[Calibration], *, measured_on: str) -> None:
    """Store fitted factors for the app (bench/bench_accuracy.py --write-bands)."""
    data = {
        "measured_on": measured_on,
        "methods": {calibration.method: calibration.as_dict() for calibration in calibrations},
    }
    FACTORS_FILE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def stored_calibration(method: str, path: Path = FACTORS_FILE) -> Calibration | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    factors = data.get("methods", {}).get(method)
    return Calibration.from_dict(method, factors) if factors else None


def calibrated_step_time(
    base: StepTimeProvider, *, engine_slug: str, accelerator_slug: str
) -> CalibratedStepTime | None:
    """The base provider with the stored factors of its method for this engine (and system
    when fitted there), or None when no published row of that engine was fitted on."""
    calibration = stored_calibration(base.method)
    backend = BACKENDS.get(engine_slug)
    if calibration is None or backend is None or (backend,) not in calibration.factors:
        return None
    factors = calibration.factors_for(backend, SYSTEMS.get(accelerator_slug, ""))
    return CalibratedStepTime(base, factors)
