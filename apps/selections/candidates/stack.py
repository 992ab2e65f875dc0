"""The unit of comparison (a serving stack) and the verdict the pipeline reaches about it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from apps.catalog.models import Accelerator, EngineRelease, KernelBackend
from apps.selections.estimator import Parallelism


@dataclass(frozen=True)
class Reason:
    """Why a stack was dropped, or a hint about a kept one: a stable code and a sentence."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Stack:
    """`backend` is the one a candidate is stored under; `backends` lists every backend the
    catalog cannot tell apart for this stack (it holds just `backend` unless collapsed)."""

    release: EngineRelease
    backend: KernelBackend | None
    accelerator: Accelerator
    layout: Parallelism
    precision: str
    alternatives: tuple[KernelBackend, ...] = ()
    layers: tuple[EngineRelease, ...] = ()

    @property
    def gpu_count(self) -> int:
        return self.layout.gpus

    @property
    def backends(self) -> tuple[KernelBackend, ...]:
        if self.alternatives:
            return self.alternatives
        return (self.backend,) if self.backend is not None else ()

    def with_backends(self, backends: tuple[KernelBackend, ...]) -> Stack:
        return replace(self, backend=backends[0], alternatives=backends)

    def with_layers(self, layers: tuple[EngineRelease, ...]) -> Stack:
        """The same stack under an orchestrator or KV layer (composition.py)."""
        return replace(self, layers=layers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "engine": self.release.engine.slug,
            "engine_version": self.release.version,
            "backend": self.backend.slug if self.backend else None,
            "backends": [backend.slug for backend in self.backends],
            "accelerator": self.accelerator.slug,
            "gpu_count": self.gpu_count,
            "tp": self.layout.tp,
            "pp": self.layout.pp,
            "ep": self.layout.ep,
            "dp": self.layout.dp,
            "precision": self.precision,
            "layers": [f"{layer.engine.slug} {layer.version}" for layer in self.layers],
        }

    def label(self) -> str:
        layout = self.layout
        slugs = "|".join(backend.slug for backend in self.backends)
        backend = f" / {slugs}" if slugs else ""
        above = "".join(f"{layer.engine.slug} {layer.version} + " for layer in self.layers)
        return (
            f"{above}{self.release.engine.slug} {self.release.version}{backend} on "
            f"{self.gpu_count}x {self.accelerator.slug} "
            f"(tp{layout.tp} pp{layout.pp} ep{layout.ep} dp{layout.dp}, {self.precision})"
        )


@dataclass
class Verdict:
    """Kept when `reasons` is empty. capability_ids are the catalog cells the verdict read."""

    stack: Stack
    reasons: list[Reason] = field(default_factory=list)
    capability_ids: list[int] = field(default_factory=list)
    maturity: float = 0.0
    operational_fit: float = 1.0
    hints: list[Reason] = field(default_factory=list)
    estimate: dict[str, Any] | None = None
    score: float | None = None
    rank: int | None = None

    @property
    def kept(self) -> bool:
        return not self.reasons
