"""Calibrating a step-time provider on published measurements, never on held-out rows.

A base method (the roofline or AIConfigurator) gets, per engine or per engine and accelerator
family (the calibration's `ttft_keys`; a key with too few rows falls back to the engine, then
to overall):
- `prefill` scales steps that compute prompt tokens;
- `rounds` is how many requests per client the benchmark ran. Its clients start together, so
  the first round's prompts queue behind each other, and the mean TTFT it reports is that queue
  amortised over its rounds (closedloop.FixedConcurrencyPrediction.over_rounds); the sample
  does not state its run length, so it is fitted;
- `ttft_overhead_ms` is time every request spends before its first token outside the engine's
  steps (HTTP, tokenising, scheduling, streaming the token back); kernel timings and the
  roofline leave it out, and at low concurrency it is most of a short prompt's TTFT. It is
  `ttft_overhead_ms` times the row's overhead scale under the calibration's `ttft_form`
  (OVERHEAD_FORMS: a constant, or growing with the model's active parameters, its layers, the
  prompt or the benchmark's concurrency), plus, for a form that fits one
  (`OverheadForm.per_client`), `ttft_overhead_per_client_ms` times the benchmark's clients: a
  fixed cost per request and the front end's cost of the other clients' requests, two terms
  where the other forms have one;
and a TPOT correction of the base method's TPOT, `exp(log_factor) x concurrency^slope`, per key
of the calibration's `tpot_form` (TPOT_FORMS: none, per engine, per engine and accelerator
family, per engine with a slope against the per-rank concurrency). Its `tpot_source` says
whether a row's TPOT is that corrected base or, where AIConfigurator's own estimate answers the
row, that estimate's TPOT or the geometric mean of the two (TPOT_SOURCES): measured kernels in
AIConfigurator's closed-form steady state, which averages mixed and decode-only steps where our
loop times each step it schedules. Its `ttft_source` says the same of TTFT (TTFT_SOURCES): the
calibrated loop's, AIConfigurator's own TTFT scaled per engine, or the geometric mean of the two.

The forms and keys are chosen by leave-group-out cross validation on the fitting rows alone:
their (model, system, engine) groups are split CV_FOLDS ways by another hash, each fold is
predicted by factors fitted on the others, and the choice with the smallest pooled median
absolute error wins (ties keep the simpler one): the later rounds' pattern (`later_rounds`:
the benchmark's later rounds repeating the first round's pattern, or its clients spread out;
stackselect_domain.closedloop), each scored by its best overhead form, and that overhead form
with factors per engine, then the TTFT keys for that form, the TTFT source, the TPOT form, and
the TPOT source (the native estimate has nothing to fit but its TTFT factor, so its error on
every fitting row is out of sample; a row it does not answer keeps the loop's TTFT and the
chosen form's cross-validated TPOT). The held-out rows play no part in it.

Each fitting row is simulated once per prompt factor of PREFILL_LADDER and later rounds'
pattern; the TTFT at a factor between two rungs is interpolated (log-log), so fitting, cross
validation and the form choice are arithmetic on those simulations. A prediction simulates at
the fitted factor itself. Fitting skips every row of the held-out split
(apps/catalog/published_sample.held_out) before any arithmetic, so perturbing one cannot move a
factor or a form (tests/selections/test_published_calibration.py checks that).

The calibrated method is the accuracy benchmark's (bench/bench_accuracy.py): its rounds and
overhead describe a published benchmark's TTFT, not a step. The fitted factors are written to
data/published_factors.json as the record of the fit the stored error bands were measured with.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np
from stackselect_domain.closedloop import (
    LATER_ROUNDS,
    LATER_ROUNDS_REPEAT,
    FixedConcurrencyPrediction,
)
from stackselect_domain.steptime import METHOD_CALIBRATED, StepBatch, StepTimeProvider

from apps.catalog.published_sample import repeated_runs
from apps.selections.aiconfigurator_provider import AicServingEstimate
from apps.selections.published_predict import (
    BENCHMARK_ROUNDS,
    RowContext,
    aiconfigurator_native_for,
    simulate_row,
)

FACTORS_FILE = Path(__file__).parent / "data" / "published_factors.json"

ROUND_CHOICES = (1, 2, 3, 5, 10, 20, 40)
OVERHEAD_CHOICES_MS = (0.0, 10.0, 20.0, 40.0, 80.0, 120.0, 160.0, 240.0, 320.0, 480.0, 640.0, 960.0)
PER_CLIENT_CHOICES_MS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
# Prompt factors every fitting row is simulated at; the fit picks among quarter-octave steps
# between them (PREFILL_GRID), interpolating the simulated TTFT.
PREFILL_LADDER = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
PREFILL_GRID = tuple(2.0 ** (-k / 4) for k in range(16, -1, -1))
LOG_CAP = math.log(4)
MIN_ROWS = 8  # fewer fitting rows for a key: use the next less specific key
CV_FOLDS = 4
TPOT_SLOPES = tuple(k / 40 for k in range(-8, 9))  # -0.2 .. 0.2


def _clients(context: RowContext) -> int:
    """The benchmark's clients on the row (one where it states none)."""
    return context.row.concurrency or 1


@dataclass(frozen=True)
class OverheadForm:
    """How a row's TTFT overhead grows: `scale` is the row's multiple of the fitted overhead (in
    ms at scale 1: 10 B active parameters, 32 layers, a 1,000-token prompt, or 10 concurrent
    clients), and a form `per_client` also fits a term per benchmark client beside it."""

    scale: Callable[[RowContext], float]
    per_client: bool = False


OVERHEAD_FORMS: dict[str, OverheadForm] = {
    "constant": OverheadForm(lambda context: 1.0),
    "sqrt_active_params": OverheadForm(
        lambda context: math.sqrt(context.model.params_active_b / 10)
    ),
    "active_params": OverheadForm(lambda context: context.model.params_active_b / 10),
    "active_params_per_gpu": OverheadForm(
        lambda context: context.model.params_active_b / 10 / context.parallelism().gpus
    ),
    "prompt_tokens": OverheadForm(lambda context: context.row.isl / 1000),
    # The server's front end (HTTP, tokenising, streaming) serves its clients' requests one at a
    # time, so the time a request waits there grows with how many arrive together.
    "concurrency": OverheadForm(lambda context: _clients(context) / 10),
    # A constant plus a term per client: at one client the front end's share is small and a
    # fixed cost per request is most of the overhead, at hundreds the other clients' requests are.
    "constant_and_clients": OverheadForm(lambda context: 1.0, per_client=True),
    # The same with the fixed cost growing with the model's depth: a prompt step runs without
    # CUDA graphs in these engines, so the host launches each layer's kernels one by one.
    "layers_and_clients": OverheadForm(lambda context: context.model.layers / 32, per_client=True),
}
TPOT_BASE, TPOT_ENGINE, TPOT_ENGINE_FAMILY, TPOT_ENGINE_SLOPE = (
    "base",
    "engine",
    "engine_family",
    "engine_concurrency",
)
TPOT_FORMS = (TPOT_BASE, TPOT_ENGINE, TPOT_ENGINE_FAMILY, TPOT_ENGINE_SLOPE)
# Where a row's TPOT comes from: the base method's, corrected by the TPOT form; AIConfigurator's
# own estimate where it answers the row; or the geometric mean of the two there (two estimates
# from the same kernels whose errors differ: ours times each scheduled step, AIConfigurator's
# averages a mixed and a decode-only step). Where the native estimate does not answer, each
# source keeps the corrected base.
TPOT_SOURCE_BASE, TPOT_SOURCE_NATIVE, TPOT_SOURCE_BLEND = "base", "aiconfigurator_native", "blend"
TPOT_SOURCES = (TPOT_SOURCE_BASE, TPOT_SOURCE_NATIVE, TPOT_SOURCE_BLEND)
# Where a row's TTFT comes from: the calibrated loop's, or, where AIConfigurator's own estimate
# answers the row, that estimate's TTFT times a factor fitted per engine, or the geometric mean
# of the two (its formula takes one prompt's prefill times a fixed queueing factor, where the
# loop queues the clients' prompts step by step: two estimates whose errors differ).
TTFT_SOURCE_BASE, TTFT_SOURCE_NATIVE, TTFT_SOURCE_BLEND = "base", "aiconfigurator_native", "blend"
TTFT_SOURCES = (TTFT_SOURCE_BASE, TTFT_SOURCE_NATIVE, TTFT_SOURCE_BLEND)
# Which rows share factors, most specific key first (a key with fewer than MIN_ROWS fitting
# rows is not fitted, so its rows use the next).
KEYS_ENGINE, KEYS_ENGINE_FAMILY = "engine", "engine_family"
KEY_FORMS: dict[str, Callable[[Sample], tuple[tuple[str, ...], ...]]] = {
    KEYS_ENGINE: lambda sample: ((sample.engine,), ()),
    KEYS_ENGINE_FAMILY: lambda sample: ((sample.engine, sample.family), (sample.engine,), ()),
}


@dataclass(frozen=True)
class StepFactors:
    prefill: float = 1.0
    rounds: int = 1
    ttft_overhead_ms: float = 0.0
    rows: int = 0
    ttft_overhead_per_client_ms: float = 0.0

    def overhead_ms(self, form: str, context: RowContext) -> float:
        """The row's TTFT overhead under an overhead form (OVERHEAD_FORMS)."""
        scaled = self.ttft_overhead_ms * OVERHEAD_FORMS[form].scale(context)
        return scaled + self.ttft_overhead_per_client_ms * _clients(context)


@dataclass(frozen=True)
class TpotFactors:
    log_factor: float = 0.0
    slope: float = 0.0
    rows: int = 0

    def scale(self, concurrency: int) -> float:
        return math.exp(self.log_factor + self.slope * math.log(concurrency))


@dataclass(frozen=True, eq=False)
class CalibratedStepTime:
    """A base provider whose prompt steps take `prefill` times as long."""

    base: StepTimeProvider
    prefill: float
    method: str = METHOD_CALIBRATED

    def step_seconds(self, batch: StepBatch) -> float:
        factor = self.prefill if batch.prefill_tokens else 1.0
        return self.base.step_seconds(batch) * factor


@dataclass(frozen=True)
class Sample:
    """A published row with the base method's provider for it."""

    context: RowContext
    provider: StepTimeProvider

    @property
    def engine(self) -> str:
        return self.context.row.backend

    @property
    def family(self) -> str:
        return self.context.accelerator.family

    @cached_property
    def native(self) -> AicServingEstimate:
        """AIConfigurator's own estimate of the row: asked once, and only of the rows a fit or a
        prediction reads."""
        return aiconfigurator_native_for(self.context)

    @property
    def native_tpot_ms(self) -> float | None:
        return self.native.tpot_ms

    @property
    def native_ttft_ms(self) -> float | None:
        return self.native.ttft_ms


@dataclass
class Calibration:
    """One base method's forms and factors, most specific key first; `cross_validation` holds
    each form's pooled cross-validated MdAPE (%) on the fitting rows."""

    method: str
    later_rounds: str = LATER_ROUNDS_REPEAT
    ttft_form: str = "constant"
    ttft_keys: str = KEYS_ENGINE
    tpot_form: str = TPOT_BASE
    tpot_source: str = TPOT_SOURCE_BASE
    ttft_source: str = TTFT_SOURCE_BASE
    ttft: dict[tuple[str, ...], StepFactors] = field(default_factory=dict)
    tpot: dict[tuple[str, ...], TpotFactors] = field(default_factory=dict)
    # log(measured / AIConfigurator's own TTFT) per engine, for the TTFT sources that use it
    native_ttft: dict[tuple[str, ...], float] = field(default_factory=dict)
    cross_validation: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def ttft_factors(self, sample: Sample) -> StepFactors:
        return _most_specific(self.ttft, KEY_FORMS[self.ttft_keys](sample), StepFactors())

    def tpot_factors(self, sample: Sample) -> TpotFactors:
        keys = KEY_FORMS[KEYS_ENGINE_FAMILY](sample)  # a table per engine has no family keys
        return _most_specific(self.tpot, keys, TpotFactors())

    def as_dict(self) -> dict:
        return {
            "later_rounds": self.later_rounds,
            "ttft_form": self.ttft_form,
            "ttft_keys": self.ttft_keys,
            "tpot_form": self.tpot_form,
            "tpot_source": self.tpot_source,
            "ttft_source": self.ttft_source,
            "ttft": {"|".join(key): asdict(value) for key, value in sorted(self.ttft.items())},
            "native_ttft_log_factor": {
                "|".join(key): value for key, value in sorted(self.native_ttft.items())
            },
            "tpot": {"|".join(key): asdict(value) for key, value in sorted(self.tpot.items())},
            "cross_validation": self.cross_validation,
        }

    def predict(
        self, sample: Sample, base: FixedConcurrencyPrediction
    ) -> FixedConcurrencyPrediction:
        """The row's calibrated TTFT and TPOT; `base` is the base method's own prediction of it
        (predict_row), whose TPOT the correction scales (the prompt factor would otherwise drag
        TPOT along through mixed steps); the TPOT source then says whether that corrected TPOT,
        AIConfigurator's own or their geometric mean is the row's (_sourced_tpot), and the TTFT
        source whether the loop's TTFT, AIConfigurator's own scaled or their geometric mean is
        the row's (_sourced_ttft)."""
        factors = self.ttft_factors(sample)
        provider = CalibratedStepTime(sample.provider, factors.prefill)
        simulated = simulate_row(provider, sample.context, later_rounds=self.later_rounds)
        simulated = simulated.over_rounds(factors.rounds)
        overhead = factors.overhead_ms(self.ttft_form, sample.context)
        scale = self.tpot_factors(sample).scale(sample.context.per_rank_concurrency)
        loop_ttft = simulated.ttft_ms + overhead
        return replace(
            base,
            ttft_ms=_sourced_ttft(self.ttft_source, sample, loop_ttft, self.native_ttft),
            tpot_ms=_sourced_tpot(self.tpot_source, sample, base.tpot_ms * scale),
            method=METHOD_CALIBRATED,
        )


def _sourced_tpot(source: str, sample: Sample, corrected_ms: float) -> float:
    """A row's TPOT under a TPOT source (TPOT_SOURCES), given its corrected base TPOT."""
    native = None if source == TPOT_SOURCE_BASE else sample.native_tpot_ms
    if native is None:
        return corrected_ms
    return native if source == TPOT_SOURCE_NATIVE else math.sqrt(native * corrected_ms)


def _sourced_ttft(
    source: str, sample: Sample, loop_ms: float, native_table: dict[tuple[str, ...], float]
) -> float:
    """A row's TTFT under a TTFT source (TTFT_SOURCES), given the calibrated loop's."""
    native = None if source == TTFT_SOURCE_BASE else sample.native_ttft_ms
    if not native:
        return loop_ms
    scaled = native * math.exp(_most_specific(native_table, KEY_FORMS[KEYS_ENGINE](sample), 0.0))
    return scaled if source == TTFT_SOURCE_NATIVE else math.sqrt(loop_ms * scaled)


def _most_specific(table: dict, keys: Sequence[tuple[str, ...]], default):
    for key in keys:
        if key in table:
            return table[key]
    return default


@dataclass(frozen=True)
class _Fitting:
    """A fitting row's simulations: TTFT (ms) by PREFILL_GRID x ROUND_CHOICES for each pattern
    of the later rounds (LATER_ROUNDS), the base TPOT."""

    sample: Sample
    group: str
    ttft_grids: dict[str, tuple[tuple[float, ...], ...]]
    base_tpot_ms: float

    @property
    def measured(self) -> tuple[float, float]:
        row = self.sample.context.row
        return row.ttft_ms, row.tpot_ms


def _interpolated(rungs: Sequence[float], values: Sequence[float], at: float) -> float:
    """Log-log interpolation of values given at rungs (ascending)."""
    upper = next(i for i, rung in enumerate(rungs) if rung >= at - 1e-12)
    if upper == 0 or rungs[upper] == at:
        return values[upper]
    low, high = rungs[upper - 1], rungs[upper]
    weight = math.log(at / low) / math.log(high / low)
    return math.exp((1 - weight) * math.log(values[upper - 1]) + weight * math.log(values[upper]))


def _ttft_grid(simulated: Sequence[FixedConcurrencyPrediction]) -> tuple[tuple[float, ...], ...]:
    """TTFT by PREFILL_GRID x ROUND_CHOICES from the simulations at each PREFILL_LADDER rung."""
    by_rounds = [[s.over_rounds(r).ttft_ms for s in simulated] for r in ROUND_CHOICES]
    return tuple(
        tuple(_interpolated(PREFILL_LADDER, by_rounds[r], p) for r in range(len(ROUND_CHOICES)))
        for p in PREFILL_GRID
    )


def _fitting(sample: Sample) -> _Fitting:
    simulated = {
        later: [
            simulate_row(
                CalibratedStepTime(sample.provider, prefill), sample.context, later_rounds=later
            )
            for prefill in PREFILL_LADDER
        ]
        for later in LATER_ROUNDS
    }
    row = sample.context.row
    # prompt factor 1, the later rounds repeating: the base method's own prediction
    base = simulated[LATER_ROUNDS_REPEAT][-1].over_rounds(BENCHMARK_ROUNDS)
    return _Fitting(
        sample,
        f"{row.model_path}|{row.system}|{row.backend}",
        {later: _ttft_grid(runs) for later, runs in simulated.items()},
        base.tpot_ms,
    )


def _capped_log_error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Mean absolute log ratio over the rows (axis 0), each capped at a factor of 4: smoother
    than the median, so the fitted factors do not jump between flat optima, and a row the loop
    cannot represent (a run whose KV cache overflowed, TTFT 100x) weighs no more than a factor
    of 4."""
    return np.minimum(np.abs(np.log(predicted / measured)), LOG_CAP).mean(axis=0)


def _fit_ttft(rows: Sequence[_Fitting], form: str, later: str) -> StepFactors:
    """The prompt factor, rounds and overhead (ms at scale 1, and per client for the forms of
    the forms that fit one) with the smallest TTFT error; on a tie, the first in that order."""
    shape = OVERHEAD_FORMS[form]
    scales = np.array([shape.scale(row.sample.context) for row in rows])
    clients = np.array([_clients(row.sample.context) for row in rows], dtype=float)
    per_client = PER_CLIENT_CHOICES_MS if shape.per_client else (0.0,)
    simulated = np.array([row.ttft_grids[later] for row in rows])[..., np.newaxis]  # rows x P x R
    measured = np.array([row.measured[0] for row in rows])[:, None, None, None]
    scores = []
    for added in per_client:
        overhead = np.multiply.outer(scales, OVERHEAD_CHOICES_MS) + added * clients[:, None]
        predicted = simulated + overhead[:, None, None, :]  # rows x P x R x overheads
        scores.append(_capped_log_error(predicted, measured))
    best = np.unravel_index(np.argmin(np.stack(scores, axis=-1)), (*scores[0].shape, len(scores)))
    p_index, r_index, o_index, c_index = (int(i) for i in best)
    return StepFactors(
        PREFILL_GRID[p_index],
        ROUND_CHOICES[r_index],
        OVERHEAD_CHOICES_MS[o_index],
        len(rows),
        per_client[c_index],
    )


def _fit_tpot(rows: Sequence[_Fitting], form: str) -> TpotFactors:
    """The log factor (and slope) minimising the mean absolute log TPOT error; the factor is
    the median residual, so a row far off weighs no more than one slightly off."""
    ratios = [math.log(row.measured[1] / row.base_tpot_ms) for row in rows]
    if form == TPOT_BASE:
        return TpotFactors(rows=len(rows))
    logs = [math.log(row.sample.context.per_rank_concurrency) for row in rows]
    best: tuple[float, TpotFactors] | None = None
    for slope in TPOT_SLOPES if form == TPOT_ENGINE_SLOPE else (0.0,):
        residuals = [r - slope * c for r, c in zip(ratios, logs, strict=True)]
        level = statistics.median(residuals)
        score = statistics.fmean(abs(r - level) for r in residuals)
        if best is None or score < best[0]:
            best = (score, TpotFactors(level, slope, len(rows)))
    assert best is not None
    return best[1]


def _keyed(rows: Sequence[_Fitting], keys: Callable[[Sample], Sequence[tuple[str, ...]]]):
    table: dict[tuple[str, ...], list[_Fitting]] = defaultdict(list)
    for row in rows:
        for key in keys(row.sample):
            table[key].append(row)
    return {key: members for key, members in table.items() if not key or len(members) >= MIN_ROWS}


def _ttft_table(
    rows: Sequence[_Fitting], form: str, keys: str, later: str
) -> dict[tuple[str, ...], StepFactors]:
    return {
        key: _fit_ttft(members, form, later)
        for key, members in sorted(_keyed(rows, KEY_FORMS[keys]).items())
    }


def _tpot_table(rows: Sequence[_Fitting], form: str) -> dict[tuple[str, ...], TpotFactors]:
    keys = KEY_FORMS[KEYS_ENGINE_FAMILY if form == TPOT_ENGINE_FAMILY else KEYS_ENGINE]
    return {key: _fit_tpot(members, form) for key, members in sorted(_keyed(rows, keys).items())}


def _fold(group: str) -> int:
    return int(hashlib.sha256(f"cv|{group}".encode()).hexdigest(), 16) % CV_FOLDS


def _mdape(pairs: Sequence[tuple[float, float]]) -> float | None:
    return round(100 * statistics.median(abs(p - m) / m for p, m in pairs), 2) if pairs else None


def _folds(rows: Sequence[_Fitting]):
    """(fitting, predicted) rows of each fold that has both."""
    for fold in range(CV_FOLDS):
        train = [row for row in rows if _fold(row.group) != fold]
        test = [row for row in rows if _fold(row.group) == fold]
        if train and test:
            yield train, test


def _cv_ttft(
    rows: Sequence[_Fitting], form: str, keys: str, later: str, source: str = TTFT_SOURCE_BASE
) -> float | None:
    """Pooled TTFT MdAPE (%) of an overhead form, key choice, later rounds' pattern and TTFT
    source, each fold predicted by factors fitted on the other folds' groups (a fold with
    nothing to fit on predicts nothing)."""
    pairs = []
    for train, test in _folds(rows):
        calibration = Calibration(
            "cv", ttft_form=form, ttft_keys=keys, ttft=_ttft_table(train, form, keys, later)
        )
        native = {} if source == TTFT_SOURCE_BASE else _native_ttft_table(train)
        for row in test:
            factors = calibration.ttft_factors(row.sample)
            p_index = PREFILL_GRID.index(factors.prefill)
            r_index = ROUND_CHOICES.index(factors.rounds)
            overhead = factors.overhead_ms(form, row.sample.context)
            loop = row.ttft_grids[later][p_index][r_index] + overhead
            pairs.append((_sourced_ttft(source, row.sample, loop, native), row.measured[0]))
    return _mdape(pairs)


def _native_ttft_table(rows: Sequence[_Fitting]) -> dict[tuple[str, ...], float]:
    """Per engine (and overall), the median log ratio of the measured TTFT to AIConfigurator's
    own, over the rows it answers; an engine with fewer than MIN_ROWS of them uses overall."""
    answered = [row for row in rows if row.sample.native_ttft_ms]
    return {
        key: statistics.median(
            math.log(row.measured[0] / row.sample.native_ttft_ms) for row in members
        )
        for key, members in sorted(_keyed(answered, KEY_FORMS[KEYS_ENGINE]).items())
    }


def _cv_tpot(rows: Sequence[_Fitting], form: str) -> list[tuple[_Fitting, float]]:
    """Each row with its TPOT under a TPOT form, every fold predicted by factors fitted on
    the others as in _cv_ttft."""
    predicted = []
    for train, test in _folds(rows):
        calibration = Calibration("cv", tpot_form=form, tpot=_tpot_table(train, form))
        for row in test:
            scale = calibration.tpot_factors(row.sample).scale(
                row.sample.context.per_rank_concurrency
            )
            predicted.append((row, row.base_tpot_ms * scale))
    return predicted


def _tpot_pairs(predicted: Sequence[tuple[_Fitting, float]]) -> list[tuple[float, float]]:
    return [(tpot, row.measured[1]) for row, tpot in predicted]


def _tpot_sources(corrected: Sequence[tuple[_Fitting, float]]) -> dict[str, float | None]:
    """Pooled TPOT MdAPE (%) of each TPOT source over the chosen form's cross-validated TPOT
    (`corrected`, from _cv_tpot); AIConfigurator's own estimate fits nothing, so each row's is
    out of sample too."""
    return {
        source: _mdape(
            [(_sourced_tpot(source, row.sample, tpot), row.measured[1]) for row, tpot in corrected]
        )
        for source in TPOT_SOURCES
    }


def _chosen(scores: dict[str, float | None]) -> str:
    """The form with the smallest score; on a tie (or when no fold could be predicted: None)
    the one listed first, the simpler."""
    order = list(scores)
    return min(order, key=lambda form: (_or_inf(scores[form]), order.index(form)))


def _or_inf(score: float | None) -> float:
    return math.inf if score is None else score


def fit_calibration(method: str, samples: Sequence[Sample]) -> Calibration:
    """Choose the forms by cross validation and fit the factors, for one base method, on the
    samples that are not held out, whose own figures add up from a cold cache (a row no method
    reproduces cold would pull every factor towards it) and whose engine batch held its clients
    (RowContext.fits_on), each run once (published_sample.repeated_runs: a run the sample
    repeats would weigh as often, and copies of one run under different layouts cannot all be
    right)."""
    candidates = [s for s in samples if s.context.fits_on]
    repeated = repeated_runs(s.context.row for s in candidates)
    fitting = [s for s in candidates if s.context.row.key not in repeated]
    if not fitting:
        raise ValueError(
            "samples: no published row outside the held-out split that the loop models to fit on"
        )
    rows = [_fitting(s) for s in sorted(fitting, key=lambda sample: sample.context.row.key)]
    # the later rounds' pattern and the overhead form, with factors per engine, first (each
    # pattern scored by its best form); then whether per engine and family
    by_pattern = {
        later: {form: _cv_ttft(rows, form, KEYS_ENGINE, later) for form in OVERHEAD_FORMS}
        for later in LATER_ROUNDS
    }
    patterns = {
        later: min((score for score in scores.values() if score is not None), default=None)
        for later, scores in by_pattern.items()
    }
    later = _chosen(patterns)
    ttft = by_pattern[later]
    ttft_form = _chosen(ttft)
    ttft_keys = {keys: _cv_ttft(rows, ttft_form, keys, later) for keys in KEY_FORMS}
    cv_tpot = {form: _cv_tpot(rows, form) for form in TPOT_FORMS}
    tpot = {form: _mdape(_tpot_pairs(predicted)) for form, predicted in cv_tpot.items()}
    keys, tpot_form = _chosen(ttft_keys), _chosen(tpot)
    ttft_sources = {
        source: _cv_ttft(rows, ttft_form, keys, later, source) for source in TTFT_SOURCES
    }
    tpot_sources = _tpot_sources(cv_tpot[tpot_form])
    return Calibration(
        method=method,
        later_rounds=later,
        ttft_form=ttft_form,
        ttft_keys=keys,
        tpot_form=tpot_form,
        tpot_source=_chosen(tpot_sources),
        ttft_source=_chosen(ttft_sources),
        ttft=_ttft_table(rows, ttft_form, keys, later),
        native_ttft=_native_ttft_table(rows),
        tpot=_tpot_table(rows, tpot_form),
        cross_validation={
            "later_rounds": patterns,
            "ttft": ttft,
            "ttft_keys": ttft_keys,
            "ttft_source": ttft_sources,
            "tpot": tpot,
            "tpot_source": tpot_sources,
        },
    )


def write_calibrations(calibrations: Sequence[Calibration], *, measured_on: str) -> None:
    """Store the fitted forms and factors (bench/bench_accuracy.py --write-bands)."""
    data = {
        "measured_on": measured_on,
        "methods": {calibration.method: calibration.as_dict() for calibration in calibrations},
    }
    FACTORS_FILE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
