"""Which settings each candidate of a plan runs with: its release's documented
recommendation for the workload's class, or a small sweep (stackselect_domain/tuning.py).

Each trial is one job; its settings go into the engine's options (the words every adapter
translates) and its `tuning` record into the job spec, so the settings are part of the run's
identity (the engine configuration the runner reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackselect_domain.tuning import (
    Trial,
    engine_knobs,
    sweep_trials,
    tunable_part,
    workload_class,
)
from stackselect_domain.workload import ClosedLoop, Workload

from apps.catalog.models import EngineRelease


def plan_workload_class(workload: Workload) -> str:
    arrival = workload.arrival
    in_flight = float(arrival.concurrency) if isinstance(arrival, ClosedLoop) else None
    return workload_class(mean_isl=workload.input_length.mean(), in_flight=in_flight)


def recommendations(release: EngineRelease, klass: str) -> list[dict[str, Any]]:
    """The release's documented settings for this workload class, as the catalog holds them."""
    return [entry for entry in release.tuned_settings or [] if entry.get("workload_class") == klass]


def candidate_trials(
    release: EngineRelease,
    klass: str,
    *,
    sweep: bool,
    values: Mapping[str, tuple[int, ...]] | None,
) -> list[Trial]:
    """A sweep's trials, or the one documented setting that applies, else the defaults."""
    documented = recommendations(release, klass)
    if sweep:
        return sweep_trials(recommended=documented, sweep=values)
    for entry in documented:
        settings = tunable_part(entry.get("settings") or {})
        if settings:
            return [Trial(settings, "recommended", entry.get("source"))]
    return [Trial({}, "defaults")]


def tuned_engine(
    engine: Mapping[str, Any],
    trial: Trial,
    *,
    release: EngineRelease,
    group: int,
    index: int,
    klass: str,
) -> dict[str, Any]:
    """The job's engine section with the trial's settings applied and recorded, also in the
    candidate's own engine knobs (the flags its adapter sets, even when the simulator runs it)."""
    tuning = {"group": group, "trial": index, "workload_class": klass, **trial.as_dict()}
    tuning["engine"] = release.engine.slug
    tuning["engine_knobs"] = engine_knobs(release.engine.slug, trial.settings)
    return {
        **engine,
        "options": {**(engine.get("options") or {}), **trial.settings},
        "tuning": tuning,
    }
