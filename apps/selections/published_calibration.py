"""Calibrating a step-time provider on published measurements, never on held-out rows.

A base method (the roofline or AIConfigurator) gets two factors per engine and system: one
scaling steps that compute prompt tokens, and the number of staggered client groups the closed
loop starts with (how synchronised the prompts arrive). Decode steps keep the base method's
time: on training rows split by group (one hash bucket as a pseudo hold-out), a fitted decode
factor made TPOT worse for both bases (AIConfigurator 14.9% -> 23-27% MdAPE), while the prompt
factor and groups took AIConfigurator's TTFT from 60% to 42%.
They are fitted on the published rows that are not held out; a row of the held-out split
(apps/catalog/published_sample.held_out) is skipped before any arithmetic, so perturbing one
cannot move a factor (tests/selections/test_published_calibration.py checks that).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from stackselect_domain.closedloop import FixedConcurrencyPrediction
from stackselect_domain.steptime import METHOD_CALIBRATED, StepBatch, StepTimeProvider

from apps.selections.aiconfigurator_provider import BACKENDS, SYSTEMS
from apps.selections.published_predict import RowContext, predict_row

FACTORS_FILE = Path(__file__).parent / "data" / "published_factors.json"

GROUP_CHOICES = (1, 2, 4, 8)
ITERATIONS = 2
MIN_ROWS = 8  # fewer fitting rows for an engine and system: use the engine's factors
MAX_ROWS_PER_KEY = 60  # fitting rows per key, spread over the key's rows in a fixed order


@dataclass(frozen=True)
class StepFactors:
    prefill: float = 1.0
    groups: int = 1
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
    """Factors per (engine, system), per engine, and overall, most specific first."""

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


def _median_ratio(pairs: Sequence[tuple[float, float]]) -> float:
    return statistics.median(measured / predicted for predicted, measured in pairs)


def _pairs(samples: Sequence[Sample], factors: StepFactors) -> tuple[list, list]:
    """(predicted, measured) TTFT pairs and TPOT pairs of the samples under these factors."""
    ttft, tpot = [], []
    for sample in samples:
        predicted, row = _predicted(sample, factors), sample.context.row
        ttft.append((predicted.ttft_ms, row.ttft_ms))
        tpot.append((predicted.tpot_ms, row.tpot_ms))
    return ttft, tpot


def _median_error(pairs: Sequence[tuple[float, float]]) -> float:
    return statistics.median(abs(predicted - measured) / measured for predicted, measured in pairs)


def _fit_key(samples: Sequence[Sample]) -> StepFactors:
    """The group count and factors with the smallest median error on these rows."""
    best: tuple[float, StepFactors] | None = None
    for groups in GROUP_CHOICES:
        factors = StepFactors(groups=groups, rows=len(samples))
        for _ in range(ITERATIONS):
            ttft, _ = _pairs(samples, factors)
            prefill = factors.prefill * _median_ratio(ttft)
            factors = StepFactors(prefill=prefill, groups=groups, rows=len(samples))
        ttft, tpot = _pairs(samples, factors)
        score = _median_error(ttft) + _median_error(tpot)
        if best is None or score < best[0]:
            best = (score, factors)
    assert best is not None
    return best[1]


def _predicted(sample: Sample, factors: StepFactors) -> FixedConcurrencyPrediction:
    provider = CalibratedStepTime(sample.provider, factors)
    return predict_row(provider, sample.context, groups=factors.groups)


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
        for key in ((row.backend, row.system), (row.backend,), ()):
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
