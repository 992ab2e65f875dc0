"""A selection's goal, parsed once into the objects the candidate pipeline works with."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from stackselect_domain.slo import SLO
from stackselect_domain.workload import OpenLoopArrivals, Workload

from apps.catalog.models import ModelSpec
from apps.selections.catalog_adapter import (
    SIXTEEN_BIT,
    custom_model_spec,
    default_kv_dtype,
    model_arch,
)
from apps.selections.estimator import ModelArch

DEFAULT_MAX_GPUS = 8


@dataclass(frozen=True)
class Goal:
    """Workload, SLO and constraints of one selection.

    `workload` is always open loop: a closed-loop goal (a fixed concurrency) is searched as a
    Poisson process, since goodput is a rate. Lengths for the estimator are the distributions'
    means, rounded up; `concurrency` keeps a closed-loop goal's client count. A custom
    architecture arrives as an unsaved ModelSpec.
    """

    model: ModelSpec
    arch: ModelArch
    precisions: tuple[str, ...]
    kv_dtype: str | None
    workload: Workload
    slo: SLO
    isl: int
    osl: int
    max_context: int | None = None
    target_rate_rps: float | None = None
    concurrency: int | None = None
    peak_factor: float = 1.0
    accelerators: tuple[str, ...] = ()
    max_gpus: int = DEFAULT_MAX_GPUS
    required_features: tuple[tuple[str, str], ...] = ()
    operational: tuple[str, ...] = ()
    prices: Mapping[str, float] = field(default_factory=dict)

    @property
    def kv_dtype_or_default(self) -> str:
        return self.kv_dtype or default_kv_dtype(self.model)

    @property
    def kv_is_sixteen_bit(self) -> bool:
        return self.kv_dtype_or_default in SIXTEEN_BIT


def open_loop_workload(workload: Workload) -> Workload:
    """The workload with an open-loop arrival, so a rate (a search step, a load point) applies.

    A closed-loop goal keeps its lengths and prefixes; its arrivals are drawn as Poisson.
    """
    if isinstance(workload.arrival, OpenLoopArrivals):
        return workload
    return replace(workload, arrival=OpenLoopArrivals("poisson", 1.0))


def goal_from_documents(
    *,
    model: ModelSpec | None,
    workload: Mapping[str, Any],
    slo: Mapping[str, Any],
    constraints: Mapping[str, Any],
) -> Goal:
    """Build a Goal from a selection's validated JSON documents (see api/serializers.py).

    `workload` must already have its trace reference resolved (replay.resolved_workload); with
    no catalog `model`, the workload's `custom_model` describes it.
    """
    parsed = Workload.from_dict(workload)
    arrival = workload["arrival"]
    precisions = workload["precision"]
    if model is None:
        model = custom_model_spec(workload.get("custom_model") or {})
    open_loop = isinstance(parsed.arrival, OpenLoopArrivals)
    return Goal(
        model=model,
        arch=model_arch(model),
        precisions=tuple([precisions] if isinstance(precisions, str) else precisions),
        kv_dtype=workload.get("kv_dtype") or None,
        workload=open_loop_workload(parsed),
        slo=SLO.from_dict(slo),
        isl=math.ceil(parsed.input_length.mean()),
        osl=math.ceil(parsed.output_length.mean()),
        max_context=workload.get("max_context"),
        target_rate_rps=parsed.arrival.rate_rps if open_loop else None,
        concurrency=None if open_loop else parsed.arrival.concurrency,
        peak_factor=arrival.get("peak_factor") or 1.0,
        accelerators=tuple(constraints.get("accelerators") or ()),
        max_gpus=constraints.get("max_gpus") or DEFAULT_MAX_GPUS,
        required_features=tuple(
            (item["feature"], item["min_maturity"])
            for item in constraints.get("required_features") or ()
        ),
        operational=tuple(constraints.get("operational") or ()),
        prices=dict(constraints.get("prices") or {}),
    )
