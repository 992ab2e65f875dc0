"""What the retest triggers watch, read from the database: the same shape at creation (the
record's baseline) and at every evaluation (the current state), so detection.py only compares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.db.models import Max, Q
from stackselect_domain.workload import parse_length

from apps.catalog.models import Capability, EngineRelease, ModelSpec, ReleaseBackend
from apps.decisions.drift import WorkloadSample
from apps.runners.models import Runner
from apps.selections.models import Selection, WorkloadTrace

# Lengths drawn from a parametric goal distribution to stand for it in the KS test.
REFERENCE_DRAWS = 2000
REFERENCE_SEED = 0
PROBE_ENVIRONMENT_FIELDS = ("gpu_model", "driver_version", "cuda_version", "rocm_version")


def runner_environment(runner: Runner) -> dict[str, Any]:
    """Hardware, driver and CUDA/ROCm as the runner's last probe reported them."""
    probe = runner.probe or {}
    gpus = probe.get("gpus") if isinstance(probe.get("gpus"), list) else []
    return {
        "accelerator": (runner.labels or {}).get("accelerator"),
        "gpus": sorted(str(gpu.get("name")) for gpu in gpus if isinstance(gpu, Mapping)),
        "gpu_count": runner.gpu_count,
        **{name: probe.get(name) for name in PROBE_ENVIRONMENT_FIELDS},
    }


def _runners(team_id: int, accelerator: str, known_ids: list[int]) -> dict[str, Any]:
    runners = Runner.objects.filter(team_id=team_id).filter(
        Q(revoked_at__isnull=True, labels__accelerator=accelerator) | Q(pk__in=known_ids)
    )
    return {str(runner.pk): runner_environment(runner) for runner in runners.order_by("pk")}


def _model(slug: str | None) -> dict[str, Any] | None:
    if not slug:
        return None
    model = ModelSpec.objects.filter(slug=slug).first()
    return None if model is None else {"slug": model.slug, "checkpoint": model.checkpoint}


def _backends(release_id: int, vendor: str) -> dict[str, bool]:
    rows = ReleaseBackend.objects.filter(release_id=release_id).select_related("backend")
    return {
        row.backend.slug: row.is_default
        for row in rows.order_by("backend__slug")
        if not row.vendors or vendor in row.vendors
    }


def _releases(engine: str) -> dict[str, str]:
    rows = EngineRelease.objects.filter(engine__slug=engine).order_by("pk")
    return {str(release.pk): release.version for release in rows}


def _cells(cell_ids: list[int]) -> dict[str, str]:
    rows = Capability.objects.filter(pk__in=cell_ids).values_list("pk", "maturity")
    return {str(pk): maturity for pk, maturity in rows}


def _last_trace_id(team_id: int) -> int:
    return WorkloadTrace.objects.filter(team_id=team_id).aggregate(last=Max("pk"))["last"] or 0


def observe(
    *,
    team_id: int,
    goal: Mapping[str, Any],
    chosen: Mapping[str, Any],
    selection_id: int | None,
    runner_ids: Sequence[int] = (),
) -> dict[str, Any]:
    """The watched state for a record whose chosen candidate entry is `chosen`."""
    release = chosen["release"]
    accelerator = chosen["accelerator"]
    selection = Selection.objects.filter(pk=selection_id).only("workload").first()
    return {
        "model": _model((goal.get("model") or {}).get("slug")),
        "engine": release["engine"],
        "releases": _releases(release["engine"]),
        "backends": _backends(release["id"], accelerator["vendor"]),
        "cells": _cells([cell["id"] for cell in chosen.get("capabilities", [])]),
        "runners": _runners(team_id, accelerator["slug"], list(runner_ids)),
        "last_trace_id": _last_trace_id(team_id),
        "workload": selection.workload if selection is not None else None,
    }


def new_traces(*, team_id: int, selection_id: int | None, after_id: int) -> list[WorkloadTrace]:
    """Traces uploaded since the baseline for the record's selection or for no selection."""
    return list(
        WorkloadTrace.objects.filter(team_id=team_id, pk__gt=after_id)
        .filter(Q(selection_id=selection_id) | Q(selection__isnull=True))
        .order_by("pk")
    )


def _rate(workload: Mapping[str, Any]) -> float | None:
    rate = (workload.get("arrival") or {}).get("rate_rps")
    return float(rate) if rate else None


def workload_sample(workload: Mapping[str, Any]) -> WorkloadSample:
    """A goal workload as lengths for the KS test: observed values as they are, a parametric
    distribution as a fixed-seed draw."""
    rng = np.random.default_rng(REFERENCE_SEED)
    lengths = []
    for name in ("isl", "osl"):
        spec = workload[name]
        if spec.get("kind") == "empirical":
            lengths.append(np.asarray(spec["values"], dtype=float))
        else:
            lengths.append(parse_length(spec, name).sample(rng, REFERENCE_DRAWS).astype(float))
    return WorkloadSample(lengths[0], lengths[1], _rate(workload))


def trace_sample(trace: WorkloadTrace) -> WorkloadSample:
    rows = trace.rows
    return WorkloadSample(
        np.asarray([row["input_tokens"] for row in rows], dtype=float),
        np.asarray([row["output_tokens"] for row in rows], dtype=float),
        (trace.summary or {}).get("mean_rate_rps"),
    )
