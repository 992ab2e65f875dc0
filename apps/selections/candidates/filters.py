"""Hard filters: each dropped stack gets every reason that applies, as a code and a sentence.

Evidence rule: a capability cell marked unsupported or deprecated drops a stack outright; no
applicable cell means the catalog has no evidence that the path exists, which also drops it
(`*_unverified`), except for 16-bit weights, the baseline path of every serving engine. A cell of
unknown maturity ("present, no label") is enough to reach hardware or load a model, but not to
meet a required feature's minimum maturity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from stackselect_domain.words import grouped
from stackselect_domain.workload import generate_requests

from apps.catalog.choices import MATURITY_RANK, EngineKind, Maturity, maturity_meets
from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections.candidates.capacity import MemoryRule, held_sequences, memory_rule
from apps.selections.candidates.goal import Goal, open_loop_workload
from apps.selections.candidates.kernels import hardware_precision_reasons, kernel_reasons
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import (
    SIXTEEN_BIT,
    CatalogSnapshot,
    Cell,
    accelerator_spec,
    hardware_feature,
    interconnect_unknown,
    precision_feature,
)
from apps.selections.estimator import MemoryEstimate, Parallelism, estimate_memory

# Requests drawn from the goal's workload to tell what share of them is over a limit.
LENGTH_SAMPLE, LENGTH_SEED = 4000, 7
NOT_SERVING = "not_a_serving_engine"
HARDWARE_UNSUPPORTED = "hardware_unsupported"
HARDWARE_UNVERIFIED = "hardware_unverified"
MODEL_UNSUPPORTED = "model_unsupported"
MODEL_UNVERIFIED = "model_unverified"
PRECISION_UNSUPPORTED = "precision_unsupported"
PRECISION_UNVERIFIED = "precision_unverified"
KV_PRECISION_UNSUPPORTED = "kv_precision_unsupported"
KV_PRECISION_UNVERIFIED = "kv_precision_unverified"
PARALLELISM_UNSUPPORTED = "parallelism_unsupported"
PARALLELISM_UNVERIFIED = "parallelism_unverified"
FEATURE_IMMATURE = "feature_immature"
MEMORY_INSUFFICIENT = "memory_insufficient"
CONTEXT_EXCEEDS_MODEL = "context_exceeds_model"
FIGURES_MISSING = "figures_missing"
INTERCONNECT_UNKNOWN = "interconnect_unknown"

_REFUSING = (Maturity.UNSUPPORTED, Maturity.DEPRECATED)


@dataclass(frozen=True)
class _Check:
    """One capability a stack needs, and the codes to report when it is missing."""

    feature: str
    what: str
    unsupported_code: str
    unverified_code: str
    optional_when_absent: bool = False


@dataclass(frozen=True)
class _CapabilityFindings:
    """What the capability cells say about a stack: drops, cells read, and two fit scores.

    maturity is the mean rank of the cells read on a 0..1 scale (stable 1, beta 2/3,
    experimental 1/3, anything else 0); operational_fit is the share of operational needs
    the engine has a cell for that is neither unsupported nor deprecated.
    """

    reasons: list[Reason]
    cell_ids: list[int]
    maturity: float
    operational_fit: float


def _engine_name(release: EngineRelease) -> str:
    return f"{release.engine.name} {release.version}"


@dataclass(frozen=True)
class StackNeeds:
    """What a stack must do for its user, whatever the stack: serve this model with a 16-bit
    or an FP8 KV cache, the features required at a minimum maturity, the operational needs."""

    model: ModelSpec
    kv_sixteen_bit: bool = True
    required_features: tuple[tuple[str, str], ...] = ()
    operational: tuple[str, ...] = ()

    @classmethod
    def of(cls, goal: Goal) -> StackNeeds:
        return cls(goal.model, goal.kv_is_sixteen_bit, goal.required_features, goal.operational)


def _checks(stack: Stack, needs: StackNeeds) -> list[_Check]:
    accelerator, model = stack.accelerator, needs.model
    checks = [
        _Check(
            hardware_feature(accelerator),
            f"{accelerator.get_vendor_display()} {accelerator.family or accelerator.name}",
            HARDWARE_UNSUPPORTED,
            HARDWARE_UNVERIFIED,
        ),
        _Check(
            model.architecture,
            f"the {model.name} architecture ({model.architecture})",
            MODEL_UNSUPPORTED,
            MODEL_UNVERIFIED,
        ),
        _Check(
            precision_feature(stack.precision),
            f"{stack.precision} weights",
            PRECISION_UNSUPPORTED,
            PRECISION_UNVERIFIED,
            optional_when_absent=stack.precision in SIXTEEN_BIT,
        ),
    ]
    if not needs.kv_sixteen_bit:
        checks.append(
            _Check("kv_fp8", "an FP8 KV cache", KV_PRECISION_UNSUPPORTED, KV_PRECISION_UNVERIFIED)
        )
    for needed, feature, what in (
        (stack.layout.tp > 1, "tensor_parallel", "tensor parallelism"),
        (stack.layout.pp > 1, "pipeline_parallel", "pipeline parallelism"),
        (stack.layout.ep > 1, "expert_parallel", "expert parallelism"),
    ):
        if needed:
            checks.append(_Check(feature, what, PARALLELISM_UNSUPPORTED, PARALLELISM_UNVERIFIED))
    return checks


def _cell(snapshot: CatalogSnapshot, stack: Stack, feature: str) -> Cell | None:
    return snapshot.cell(
        stack.release,
        feature,
        backend_id=stack.backend.pk if stack.backend else None,
        accelerator=stack.accelerator,
    )


def capability_findings(
    snapshot: CatalogSnapshot, stack: Stack, needs: StackNeeds
) -> _CapabilityFindings:
    """What the capability cells say about the stack against the needs (module docstring)."""
    engine = _engine_name(stack.release)
    reasons, cells = [], []
    for check in _checks(stack, needs):
        cell = _cell(snapshot, stack, check.feature)
        if cell is not None:
            cells.append(cell)
        if cell is not None and cell.maturity in _REFUSING:
            message = f"The catalog records {check.what} as {cell.maturity} in {engine}."
            reasons.append(Reason(check.unsupported_code, message))
        elif cell is None and not check.optional_when_absent:
            message = f"The catalog has no evidence that {engine} supports {check.what}."
            reasons.append(Reason(check.unverified_code, message))
    for feature, minimum in needs.required_features:
        cell = _cell(snapshot, stack, feature)
        if cell is not None:
            cells.append(cell)
        if cell is None or not maturity_meets(cell.maturity, minimum):
            found = cell.maturity if cell else "no catalog cell"
            message = f"{feature} needs at least {minimum} in {engine}; found {found}."
            reasons.append(Reason(FEATURE_IMMATURE, message))
    operational = [_cell(snapshot, stack, need) for need in needs.operational]
    met = [cell for cell in operational if cell is not None and cell.maturity not in _REFUSING]
    return _CapabilityFindings(
        reasons=[
            *kernel_reasons(stack, needs.model),
            *hardware_precision_reasons(stack.precision, stack.accelerator),
            *reasons,
        ],
        cell_ids=[cell.id for cell in cells + met],
        maturity=sum(MATURITY_RANK[c.maturity] for c in cells) / (3 * len(cells) or 1),
        operational_fit=len(met) / len(operational) if operational else 1.0,
    )


class Judge:
    """Applies the hard filters to stacks of one goal, caching what stacks share."""

    def __init__(self, snapshot: CatalogSnapshot, goal: Goal) -> None:
        self.snapshot = snapshot
        self.goal = goal
        self.needs = StackNeeds.of(goal)
        self._capabilities: dict[tuple, _CapabilityFindings] = {}
        self._memory: dict[tuple, MemoryEstimate | Reason] = {}
        self._lengths: tuple[np.ndarray, np.ndarray] | None = None

    def sampled_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """Prompt and output lengths of LENGTH_SAMPLE requests of the goal's workload (a fixed
        seed), drawn once: what share of the goal's requests is over a limit."""
        if self._lengths is None:
            requests = generate_requests(
                open_loop_workload(self.goal.workload), LENGTH_SAMPLE, LENGTH_SEED
            )
            self._lengths = (
                np.array([r.input_tokens for r in requests]),
                np.array([r.output_tokens for r in requests]),
            )
        return self._lengths

    def verdict(self, stack: Stack) -> Verdict:
        if stack.release.engine.kind != EngineKind.ENGINE:
            kind = stack.release.engine.get_kind_display().lower()
            article = "an" if kind[:1] in "aeiou" else "a"
            message = (
                f"{stack.release.engine.name} is {article} {kind}, not a serving engine: it is "
                "offered on top of an engine it runs on where the goal needs what it provides."
            )
            return Verdict(stack, reasons=[Reason(NOT_SERVING, message)])
        key = (stack.release.pk, stack.backend and stack.backend.pk, stack.accelerator.pk)
        key += (stack.precision, stack.layout.tp > 1, stack.layout.pp > 1, stack.layout.ep > 1)
        if key not in self._capabilities:
            self._capabilities[key] = capability_findings(self.snapshot, stack, self.needs)
        found = self._capabilities[key]
        memory = self.memory_of(stack)
        verdict = Verdict(
            stack,
            reasons=list(found.reasons),
            capability_ids=list(found.cell_ids),
            maturity=found.maturity,
            operational_fit=found.operational_fit,
        )
        if isinstance(memory, Reason):
            verdict.reasons.append(memory)
        else:
            verdict.reasons.extend(self._fit_reasons(stack, memory))
            record = _memory_dict(memory, memory_rule(stack.release))
            held = held_sequences(self.goal, stack, memory)
            if held != memory.max_concurrent_sequences:
                record["shared_prefix_sequences"] = held
            verdict.estimate = {"memory": record}
        return verdict

    # ------------------------------------------------------------ memory

    def memory(
        self,
        release: EngineRelease,
        accelerator: Accelerator,
        precision: str,
        layout: Parallelism,
        *,
        kv_dtype: str | None = None,
    ) -> MemoryEstimate | Reason:
        """The memory estimate of a replica under the release's own memory rule, or the reason
        it cannot be made; cached. kv_dtype overrides the goal's (to price a suggestion)."""
        rule = memory_rule(release)
        kv = kv_dtype or self.goal.kv_dtype_or_default
        key = (accelerator.pk, precision, layout, rule.fraction, rule.basis, kv)
        if key not in self._memory:
            self._memory[key] = self._estimate_memory(accelerator, precision, layout, rule, kv)
        return self._memory[key]

    def memory_of(self, stack: Stack) -> MemoryEstimate | Reason:
        return self.memory(stack.release, stack.accelerator, stack.precision, stack.layout)

    def _estimate_memory(
        self,
        accelerator: Accelerator,
        precision: str,
        layout: Parallelism,
        rule: MemoryRule,
        kv_dtype: str,
    ) -> MemoryEstimate | Reason:
        try:
            spec = accelerator_spec(accelerator)
        except ValueError as error:
            return Reason(FIGURES_MISSING, f"Cannot estimate this stack: {error}.")
        if unlinked := interconnect_unknown(accelerator, layout):
            return Reason(INTERCONNECT_UNKNOWN, unlinked)
        return estimate_memory(
            model=self.goal.arch,
            accel=spec,
            precision=precision,
            kv_dtype=kv_dtype,
            parallelism=layout,
            isl=self.goal.isl,
            osl=self.goal.osl,
            gpu_memory_utilization=rule.fraction,
            memory_basis=rule.basis,
        )

    def _fit_reasons(self, stack: Stack, memory: MemoryEstimate) -> list[Reason]:
        goal, reasons = self.goal, []
        model_limit = goal.model.max_context
        if goal.max_context and model_limit and goal.max_context > model_limit:
            message = (
                f"The workload needs {grouped(goal.max_context)} tokens of context; "
                f"{goal.model.name} takes at most {grouped(model_limit)}."
            )
            reasons.append(Reason(CONTEXT_EXCEEDS_MODEL, message))
        if not memory.fits:
            message = (
                f"Does not fit on {stack.gpu_count}x {stack.accelerator.name}: {memory.reason}."
            )
            reasons.append(Reason(MEMORY_INSUFFICIENT, message))
        elif goal.max_context and memory.kv_capacity_tokens < goal.max_context:
            message = (
                f"The KV cache holds {grouped(memory.kv_capacity_tokens)} tokens per replica, "
                f"less than one request at the maximum context of {grouped(goal.max_context)}."
            )
            reasons.append(Reason(MEMORY_INSUFFICIENT, message))
        return reasons


def _memory_dict(memory: MemoryEstimate, rule: MemoryRule) -> dict[str, float | int | str]:
    return {
        "weights_gb_per_gpu": round(memory.weights_gb_per_gpu, 3),
        "kv_gb_per_gpu": round(memory.kv_gb_per_gpu, 3),
        "kv_capacity_tokens": memory.kv_capacity_tokens,
        "max_concurrent_sequences": memory.max_concurrent_sequences,
        "memory_fraction": rule.fraction,
        "memory_basis": rule.basis,
        "memory_rule": rule.describe(),
    }
