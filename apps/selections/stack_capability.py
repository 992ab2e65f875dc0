"""What the capability matrix says of the one stack an estimate names.

The candidate list judges stacks with the same cells (candidates/filters.capability_findings).
A stack the catalog records as unable to run (a cell marked unsupported or deprecated, a kernel
backend's sourced facts, FP4 weights without FP4 tensor cores) is refused, one field error per
reason, so no figure is shown for it; a stack the catalog holds no evidence for either way is
answered with those gaps named beside the figures.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from apps.catalog.models import Accelerator, EngineRelease, KernelBackend, ModelSpec
from apps.selections.candidates.filters import (
    HARDWARE_UNSUPPORTED,
    KV_PRECISION_UNSUPPORTED,
    MODEL_UNSUPPORTED,
    PARALLELISM_UNSUPPORTED,
    PRECISION_UNSUPPORTED,
    StackNeeds,
    capability_findings,
)
from apps.selections.candidates.kernels import (
    HARDWARE_PRECISION_UNSUPPORTED,
    KERNEL_ATTENTION_MISMATCH,
    KERNEL_HARDWARE_MISMATCH,
    KERNEL_PRECISION_MISMATCH,
)
from apps.selections.candidates.stack import Stack
from apps.selections.catalog_adapter import SIXTEEN_BIT, CatalogSnapshot
from apps.selections.estimator import Parallelism

# The input field each reason a stack cannot run blames: the engine release for what its cells
# refuse, the KV cache's precision where the refused cell is the FP8 KV cache, the kernel backend
# for its own facts, the precision for the hardware's.
CANNOT_RUN_FIELDS = {
    HARDWARE_UNSUPPORTED: "engine",
    MODEL_UNSUPPORTED: "engine",
    PRECISION_UNSUPPORTED: "engine",
    PARALLELISM_UNSUPPORTED: "engine",
    KV_PRECISION_UNSUPPORTED: "kv_dtype",
    KERNEL_ATTENTION_MISMATCH: "backend",
    KERNEL_PRECISION_MISMATCH: "backend",
    KERNEL_HARDWARE_MISMATCH: "backend",
    HARDWARE_PRECISION_UNSUPPORTED: "precision",
}
RECORDED, UNVERIFIED = "recorded", "unverified"


class StackCannotRun(ValueError):
    """The catalog records the stack as unable to run; `errors` maps fields to reasons."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(m for messages in errors.values() for m in messages))
        self.errors = errors


def stack_capability(
    *,
    release: EngineRelease,
    backend: str,
    accelerator: Accelerator,
    layout: Parallelism,
    precision: str,
    model: ModelSpec,
    kv_dtype: str,
) -> dict[str, Any]:
    """The capability record of the stack: `recorded` when a cell backs every need, else
    `unverified` with the needs no cell speaks to. Raises StackCannotRun instead of answering
    for a stack the catalog records as unable to run."""
    kernel = KernelBackend.objects.get(slug=backend) if backend else None
    stack = Stack(release, kernel, accelerator, layout, precision)
    needs = StackNeeds(model, kv_sixteen_bit=kv_dtype in SIXTEEN_BIT)
    snapshot = CatalogSnapshot.of_release(release, accelerator)
    findings = capability_findings(snapshot, stack, needs)
    errors: dict[str, list[str]] = defaultdict(list)
    for reason in findings.reasons:
        if reason.code in CANNOT_RUN_FIELDS:
            errors[CANNOT_RUN_FIELDS[reason.code]].append(reason.message)
    if errors:
        raise StackCannotRun(dict(errors))
    return {
        "verdict": UNVERIFIED if findings.reasons else RECORDED,
        "reasons": [reason.as_dict() for reason in findings.reasons],
        "capability_ids": findings.cell_ids,
    }
