"""Kernel applicability: which stacks a kernel backend's sourced facts rule out, and why.

A backend records the attention kinds, weight formats (prec_* keys) and accelerator families it
serves (KernelBackend in apps/catalog/models.py). A stack outside any of them cannot run, so it
is dropped with one reason per fact it breaks. Backends that pass and that the catalog cannot
tell apart afterwards (same cells, same scores) collapse into one candidate listing them all.
"""

from __future__ import annotations

from collections.abc import Iterable

from apps.catalog.models import Accelerator, KernelBackend, ModelSpec
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import CatalogSnapshot, precision_feature

KERNEL_ATTENTION_MISMATCH = "kernel_attention_mismatch"
KERNEL_PRECISION_MISMATCH = "kernel_precision_mismatch"
KERNEL_HARDWARE_MISMATCH = "kernel_hardware_mismatch"
HARDWARE_PRECISION_UNSUPPORTED = "hardware_precision_unsupported"

# Precision words whose matrix maths runs on FP4 tensor cores (NVFP4 W4A4). MXFP4 is left out:
# engines dequantise MXFP4 weights on older GPUs (gpt-oss runs on Hopper that way).
FP4_TENSOR_CORE_PRECISIONS = ("fp4",)


def _source(backend: KernelBackend) -> str:
    dated = f", as of {backend.applicability_as_of}" if backend.applicability_as_of else ""
    return (
        f" (source: {backend.applicability_source}{dated})" if backend.applicability_source else ""
    )


def kernel_reasons(stack: Stack, model: ModelSpec) -> list[Reason]:
    """Every applicability fact of the stack's backend that the stack breaks."""
    backend = stack.backend
    if backend is None:
        return []
    reasons = []
    kinds = backend.attention_kinds or []
    if kinds and model.attention_kind not in kinds:
        reasons.append(
            Reason(
                KERNEL_ATTENTION_MISMATCH,
                f"{backend.name} serves {', '.join(kinds)} attention only; {model.name} uses "
                f"{model.attention_kind}{_source(backend)}.",
            )
        )
    feature = precision_feature(stack.precision)
    formats = backend.precisions or []
    if formats and feature not in formats:
        reasons.append(
            Reason(
                KERNEL_PRECISION_MISMATCH,
                f"{backend.name} does not run {stack.precision} weights ({feature}); it runs "
                f"{', '.join(formats)}{_source(backend)}.",
            )
        )
    family = stack.accelerator.family
    families = backend.families or []
    if families and family not in families:
        reasons.append(
            Reason(
                KERNEL_HARDWARE_MISMATCH,
                f"{backend.name} is built for {', '.join(families)} GPUs, not "
                f"{stack.accelerator.name} ({family or 'no family'}){_source(backend)}.",
            )
        )
    return reasons


def hardware_precision_reasons(precision: str, accelerator: Accelerator) -> list[Reason]:
    """FP4 matrix maths needs FP4 tensor cores: an accelerator with no sourced FP4 rate lacks
    them (Blackwell and CDNA4 have them; Hopper, Ada and Ampere do not)."""
    if precision not in FP4_TENSOR_CORE_PRECISIONS or accelerator.fp4_tflops:
        return []
    family = accelerator.family or accelerator.vendor
    return [
        Reason(
            HARDWARE_PRECISION_UNSUPPORTED,
            f"{precision} weights need FP4 tensor cores; the catalog records no FP4 rate for "
            f"{accelerator.name} ({family}).",
        )
    ]


Scoped = dict[tuple[int, int], dict[str, tuple[int, ...]]]


def _backend_scoped(snapshot: CatalogSnapshot) -> Scoped:
    """{(release id, backend id): {feature: ids of the cells narrowed to that backend}}."""
    scoped: Scoped = {}
    for (release_id, feature), cells in snapshot.cells.items():
        for cell in cells:
            if cell.backend_id is not None:
                by_feature = scoped.setdefault((release_id, cell.backend_id), {})
                by_feature[feature] = (*by_feature.get(feature, ()), cell.id)
    return scoped


def _twin_key(verdict: Verdict, scoped: Scoped, relevant: frozenset[str]) -> tuple:
    """What tells a kept stack apart: the cells it read, and any backend-scoped cell of a
    feature this goal touches (its precision, or prefix caching for a prefix-heavy workload)."""
    stack = verdict.stack
    backend_id = stack.backend.pk if stack.backend else None
    own = scoped.get((stack.release.pk, backend_id), {})
    features = relevant | {precision_feature(stack.precision)}
    return (
        stack.release.pk,
        stack.accelerator.pk,
        stack.layout,
        stack.precision,
        tuple(sorted(set(verdict.capability_ids))),
        tuple(sorted((key, ids) for key, ids in own.items() if key in features)),
        verdict.maturity,
        verdict.operational_fit,
    )


def collapse_backends(
    kept: Iterable[Verdict], snapshot: CatalogSnapshot, *, relevant: Iterable[str] = ()
) -> list[Verdict]:
    """One verdict per group of kept stacks that differ only in a backend the catalog cannot
    tell apart for this goal (see _twin_key); `relevant` names features the goal's hints read.
    The first verdict stands for its group, and its stack lists every backend of the group."""
    scoped, features = _backend_scoped(snapshot), frozenset(relevant)
    groups: dict[tuple, list[Verdict]] = {}
    for verdict in kept:
        groups.setdefault(_twin_key(verdict, scoped, features), []).append(verdict)
    collapsed = []
    for members in groups.values():
        lead = members[0]
        backends = tuple(v.stack.backend for v in members if v.stack.backend is not None)
        if len(backends) > 1:
            lead.stack = lead.stack.with_backends(backends)
        collapsed.append(lead)
    return collapsed
