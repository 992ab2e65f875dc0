"""The calibrated method in the app: a stack's figures from its base provider (the roofline, or
AIConfigurator where it covers the stack), corrected by the factors the accuracy benchmark
fitted on published rows outside the held-out split.

The factors are the bench's own (`published_calibration.stored_calibrations`: the fit
`bench/bench_accuracy.py --write-bands` stored in data/published_factors.json with the error
bands measured with it), applied with the same arithmetic (`Calibration.correction`): prompt
steps take `prefill` times the base provider's time, TTFT gets the fitted overhead per request,
TPOT is the base method's TPOT times the fitted correction at the stack's concurrency. The
fitted rounds per client describe how the published benchmark ran (its synchronised first round
amortised over its run), not a served stack, so they are not applied; the figures carry the
calibrated method's held-out band, measured with them.

The factors cover a stack when the published rows they were fitted on measure its engine and
accelerator (the sample's systems, `published_sample.SYSTEM_ACCELERATORS`) and the fit has
factors of the engine's own (at least MIN_ROWS fitting rows; the overall fallback the bench
uses for an engine it has no key for is not applied to a served stack), and the team has no
factors fitted on its own runs for the stack (those are more specific and win). Otherwise the
stack keeps its base provider and its note says why it is not calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from stackselect_domain.steptime import (
    METHOD_AICONFIGURATOR,
    METHOD_CALIBRATED,
    METHOD_ROOFLINE,
    StepTimeProvider,
)

from apps.catalog.published_sample import ENGINE_SLUGS, SYSTEM_ACCELERATORS
from apps.selections.estimator import LatencyEstimate, StepTimeFactory, estimate_latency
from apps.selections.published_calibration import (
    FACTORS_FILE,
    CalibratedStepTime,
    Calibration,
    Correction,
    OverheadBasis,
    StoredCalibrations,
    stored_calibrations,
)
from apps.selections.steptime_providers import StackInputs

# catalog engine slug -> the sample's backend name, which the factors are keyed by
BACKENDS = {slug: backend for backend, slug in ENGINE_SLUGS.items()}
PUBLISHED_ACCELERATORS = tuple(sorted(set(SYSTEM_ACCELERATORS.values())))
BASE_NAMES = {METHOD_ROOFLINE: "roofline", METHOD_AICONFIGURATOR: "AIConfigurator"}
FACTORS_PATH = f"apps/selections/data/{FACTORS_FILE.name}"
TEAM_FACTORS_REASON = "the team's own measured runs have fitted factors for it, which apply"


@dataclass(frozen=True)
class CalibratedChoice:
    """The stored calibration that covers a stack over its base method, or None with why not."""

    base_method: str
    calibration: Calibration | None
    reason: str = ""
    engine: str = ""
    family: str = ""
    measured_on: str = ""

    @property
    def applies(self) -> bool:
        return self.calibration is not None

    def correction(self, stack: StackInputs, *, isl: int, concurrency: int) -> Correction:
        assert self.calibration is not None, "only a covering choice corrects"
        basis = OverheadBasis(stack.model.params_active_b, stack.parallelism.gpus, isl)
        return self.calibration.correction(
            engine=BACKENDS[self.engine],
            family=self.family,
            basis=basis,
            concurrency=max(concurrency, 1),
        )

    def name(self, correction: Correction) -> str:
        """The method as a reader sees it: which base, how many published rows fitted it."""
        base = BASE_NAMES.get(self.base_method, self.base_method)
        return (
            f"calibrated ({base} x factors fitted on {correction.ttft_rows} published "
            f"{self.engine} rows)"
        )

    def note(self, correction: Correction, concurrency: int) -> str:
        base = BASE_NAMES.get(self.base_method, self.base_method)
        key = "/".join(correction.ttft_key)
        return (
            f"{self.name(correction)}: the {base}'s figures with prompt steps "
            f"x{correction.prefill:.2f}, TTFT +{correction.ttft_overhead_ms:.0f} ms per request "
            f"and TPOT x{correction.tpot_scale:.2f} at {concurrency} in flight, the factors "
            f"the accuracy benchmark fitted for {key} on published rows outside the held-out "
            f"split (measured {self.measured_on}, {FACTORS_PATH}); the fitted "
            f"{correction.rounds} round(s) per client describe the published benchmark's run "
            "and are not applied"
        )


def fallback_note(note: str, choice: CalibratedChoice) -> str:
    """The base method's note, saying why the calibrated method does not apply."""
    return f"{note}; not calibrated, because {choice.reason}"


def calibrated_choice(
    stack: StackInputs,
    base_method: str,
    *,
    team_factors: bool = False,
    stored: StoredCalibrations | None = None,
) -> CalibratedChoice:
    """Whether the stored factors (by default the bench's file, read once) cover the stack
    over `base_method` (the method of the provider the stack would use without them)."""
    if team_factors:
        return CalibratedChoice(base_method, None, TEAM_FACTORS_REASON)
    return _choice(
        stored or stored_calibrations(),
        stack.engine,
        stack.accelerator_slug,
        stack.accelerator_family,
        base_method,
    )


@lru_cache(maxsize=1024)
def _choice(
    stored: StoredCalibrations, engine: str, accelerator: str, family: str, base_method: str
) -> CalibratedChoice:
    calibration = stored.methods.get(base_method)
    if calibration is None:
        reason = (
            f"no calibration of the {base_method} is stored ({FACTORS_PATH} is written by "
            "bench/bench_accuracy.py --write-bands)"
        )
        return CalibratedChoice(base_method, None, reason)
    if engine not in BACKENDS:
        engines = ", ".join(sorted(BACKENDS))
        reason = (
            f"the published rows the factors are fitted on measure no "
            f"{engine or 'unnamed engine'} (only {engines})"
        )
        return CalibratedChoice(base_method, None, reason)
    if accelerator not in PUBLISHED_ACCELERATORS:
        reason = (
            f"the published rows the factors are fitted on measure no {accelerator or 'such'} "
            f"accelerator (only {', '.join(PUBLISHED_ACCELERATORS)})"
        )
        return CalibratedChoice(base_method, None, reason)
    backend = BACKENDS[engine]
    ttft_key, _ = calibration.ttft_entry(backend, family)
    tpot_key, _ = calibration.tpot_entry(backend, family)
    if not ttft_key or not tpot_key:
        reason = (
            f"the {base_method}'s fit has no factors of {engine}'s own (fewer fitting rows "
            "than a key needs); its overall factors are not applied to a served stack"
        )
        return CalibratedChoice(base_method, None, reason)
    return CalibratedChoice(
        base_method, calibration, engine=engine, family=family, measured_on=stored.measured_on
    )


def prompt_scaled(step_time: StepTimeFactory, prefill: float) -> StepTimeFactory:
    """The base factory's providers with prompt steps x `prefill` (CalibratedStepTime)."""

    def provider(decode_batch: int, context: float) -> StepTimeProvider:
        return CalibratedStepTime(step_time(decode_batch, context), prefill)

    return provider


def _reused(step_time: StepTimeFactory) -> StepTimeFactory:
    built: dict[tuple[int, float], StepTimeProvider] = {}

    def provider(decode_batch: int, context: float) -> StepTimeProvider:
        key = (decode_batch, context)
        if key not in built:
            built[key] = step_time(decode_batch, context)
        return built[key]

    return provider


def calibrated_latency(
    stack: StackInputs,
    choice: CalibratedChoice,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    step_time: StepTimeFactory,
) -> tuple[LatencyEstimate, Correction]:
    """The analytic estimate corrected as the bench corrects a row: TTFT from prompt steps x
    prefill plus the overhead (the prompt's step alone, prefill_ms, x prefill); TPOT and the
    decode step from the base provider's, x the TPOT correction."""
    correction = choice.correction(stack, isl=isl, concurrency=concurrency)
    shared = {**stack.replica(), "isl": isl, "osl": osl, "concurrency": concurrency}
    step_time = _reused(step_time)  # both estimates ask for the same loads: build each once
    plain = estimate_latency(**shared, step_time=step_time)
    scaled = estimate_latency(**shared, step_time=prompt_scaled(step_time, correction.prefill))
    latency = replace(
        plain,
        ttft_ms=scaled.ttft_ms + correction.ttft_overhead_ms,
        prefill_ms=scaled.prefill_ms,
        tpot_ms=plain.tpot_ms * correction.tpot_scale,
        decode_step_ms=plain.decode_step_ms * correction.tpot_scale,
    )
    return latency, correction


def calibrated_record(
    choice: CalibratedChoice,
    correction: Correction,
    nature: str,
    *,
    concurrency: int,
    base: StepTimeProvider | None = None,
) -> dict[str, str]:
    """The method fields (as steptime_providers.method_record) of a calibrated figure."""
    return {
        "method": METHOD_CALIBRATED,
        "nature": nature,
        "label": f"{choice.name(correction)}, {nature}",
        "engine_profile": getattr(base, "engine", "") if base is not None else "",
        "method_note": choice.note(correction, concurrency),
    }
