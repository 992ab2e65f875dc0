"""From a runner's probe to its routing labels and queues. Pure Python: no Django here.

The probe says what the machine has (GPU names as the driver reports them); routing needs a
catalog accelerator slug. Names differ ("NVIDIA H100 80GB HBM3" from nvidia-smi vs the
catalog's "NVIDIA H100 SXM"), so matching keys on the model tokens: the words of a catalog
name that contain a digit ("h100", "mi300x", "4090"), the first of which must appear in the
GPU's name. Ties go to the most model tokens matched, then the closest memory size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stackselect_domain.engine_versions import BUILD_SERIES, release_accepts, version_series

MAX_GPUS = 64
# Model-store keys a probe may list; each becomes part of the runner's real-engine queues.
MAX_MODELS = 64
# Ships with every runner; its version is the runner's own, so jobs never ask for one.
SIMULATED_ENGINE = "simulated"
# llama.cpp's frontends (stackselect_domain.speculative.METHOD_FRONTENDS): the probe reports
# llama-server's build as the "llama-cpp" engine, or "llama-cpp-python <version>" there when
# only the Python package serves it, and the Python package as "llama-cpp-python".
LLAMA_CPP = "llama-cpp"
LLAMA_SERVER = "llama-server"
LLAMA_CPP_PYTHON = "llama-cpp-python"
FRONTEND_WORDS = {
    LLAMA_SERVER: "llama.cpp's own server, needed to speculate with a draft model",
    LLAMA_CPP_PYTHON: "llama.cpp's Python server, needed to speculate by prompt lookup",
}
_MIB_PER_GB = 1e9 / 2**20


@dataclass(frozen=True)
class CatalogAccelerator:
    slug: str
    name: str
    memory_gb: float | None = None


@dataclass(frozen=True)
class Labels:
    accelerator: str | None
    gpu_count: int
    engines: dict[str, str]
    simulated: bool
    # The catalog model slugs (a custom model's checkpoint name) the runner's model store maps
    # to local checkpoints: a real engine runs only those.
    models: frozenset[str] = frozenset()
    # Draft model key (a plan's speculative.draft_model) -> the models it drafts for.
    drafts: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "gpu_count": self.gpu_count,
            "engines": sorted(self.engines),
            "simulated": self.simulated,
            "models": sorted(self.models),
            "draft_models": {key: sorted(models) for key, models in sorted(self.drafts.items())},
        }

    def drafts_for(self, model: str) -> list[str]:
        return sorted(key for key, models in self.drafts.items() if model in models)

    def frontends(self, engine: str) -> dict[str, str]:
        """The frontends of `engine` this runner has, with their versions (only llama.cpp has
        more than one; empty for the others)."""
        if engine != LLAMA_CPP or engine not in self.engines:
            return {}
        build = self.engines[engine]
        prefix = LLAMA_CPP_PYTHON + " "
        if build.startswith(prefix):
            found = {LLAMA_CPP_PYTHON: build.removeprefix(prefix)}
        else:
            found = {LLAMA_SERVER: build}
        if LLAMA_CPP_PYTHON in self.engines:
            found[LLAMA_CPP_PYTHON] = self.engines[LLAMA_CPP_PYTHON]
        return found


def _tokens(name: str) -> list[str]:
    return [token for token in re.split(r"[^a-z0-9]+", name.lower()) if token]


def _model_tokens(name: str) -> list[str]:
    return [token for token in _tokens(name) if any(ch.isdigit() for ch in token)]


def match_accelerator(
    gpu_name: str, memory_mib: float | None, catalog: Iterable[CatalogAccelerator]
) -> str | None:
    """The catalog slug for a GPU name as a driver reports it, or None when nothing matches."""
    words = set(_tokens(gpu_name))
    if not words:
        return None
    best: tuple[int, float, str] | None = None
    for accelerator in catalog:
        if gpu_name.strip().lower() == accelerator.slug:
            return accelerator.slug
        model = _model_tokens(accelerator.name)
        if not model or model[0] not in words:
            continue
        matched = sum(token in words for token in model)
        distance = (
            abs(memory_mib / _MIB_PER_GB - accelerator.memory_gb)
            if memory_mib and accelerator.memory_gb
            else 0.0
        )
        key = (matched, -distance, accelerator.slug)
        if best is None or key[:2] > best[:2]:
            best = key
    return best[2] if best else None


def _require_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{field}: must be an object")
    return value


def _is_slug(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _validate_drafts(drafts: Any) -> None:
    """`draft_models`: draft model key -> the model slugs it drafts for, each a non-empty list."""
    if not isinstance(drafts, Mapping) or len(drafts) > MAX_MODELS:
        raise ValueError(
            f"probe.draft_models: must be an object of at most {MAX_MODELS} draft model keys, "
            "each mapped to the model slugs it drafts for"
        )
    for key, models in drafts.items():
        if not _is_slug(key):
            raise ValueError("probe.draft_models: draft model keys must be non-empty strings")
        if (
            not isinstance(models, list)
            or not 0 < len(models) <= MAX_MODELS
            or not all(_is_slug(model) for model in models)
        ):
            raise ValueError(
                f"probe.draft_models.{key}: must be a list of 1 to {MAX_MODELS} model slugs "
                "(non-empty strings) it drafts for"
            )


def validate_probe(probe: Any) -> dict[str, Any]:
    """Check the fields routing relies on; other probe fields are kept as sent."""
    probe = dict(_require_mapping(probe, "probe"))
    gpus = probe.get("gpus", [])
    if not isinstance(gpus, list):
        raise ValueError("probe.gpus: must be a list")
    for index, gpu in enumerate(gpus):
        gpu = _require_mapping(gpu, f"probe.gpus[{index}]")
        if not isinstance(gpu.get("name"), str) or not gpu["name"].strip():
            raise ValueError(f"probe.gpus[{index}].name: must be a non-empty string")
    count = probe.get("gpu_count", len(gpus))
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_GPUS:
        raise ValueError(f"probe.gpu_count: must be a whole number from 0 to {MAX_GPUS}")
    engines = probe.get("engines", {})
    if not isinstance(engines, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str | None) for key, value in engines.items()
    ):
        raise ValueError("probe.engines: must map engine names to version strings")
    models = probe.get("models", [])
    if (
        not isinstance(models, list)
        or len(models) > MAX_MODELS
        or not all(isinstance(model, str) and model.strip() for model in models)
    ):
        raise ValueError(
            f"probe.models: must be a list of at most {MAX_MODELS} model slugs (non-empty strings)"
        )
    _validate_drafts(probe.get("draft_models", {}))
    if not isinstance(probe.get("simulated", False), bool):
        raise ValueError("probe.simulated: must be true or false")
    simulated_accelerator = probe.get("simulated_accelerator")
    if simulated_accelerator is not None and not isinstance(simulated_accelerator, str):
        raise ValueError("probe.simulated_accelerator: must be a catalog accelerator slug")
    if probe.get("simulated") and not simulated_accelerator:
        raise ValueError("probe.simulated_accelerator: a simulated runner must name its hardware")
    return probe


def derive_labels(probe: Mapping[str, Any], catalog: Iterable[CatalogAccelerator]) -> Labels:
    """Routing labels of a validated probe; a simulated runner declares its hardware."""
    catalog = list(catalog)
    simulated = bool(probe.get("simulated", False))
    gpus = probe.get("gpus", [])
    gpu_count = int(probe.get("gpu_count", len(gpus)))
    if simulated:
        name, memory = str(probe["simulated_accelerator"]), None
    elif gpus:
        name, memory = str(gpus[0]["name"]), gpus[0].get("memory_mib")
    else:
        name, memory = str(probe.get("gpu_model") or ""), None
    accelerator = match_accelerator(name, memory, catalog) if name else None
    engines = {key: value or "" for key, value in dict(probe.get("engines", {})).items()}
    models = frozenset(str(model).strip() for model in probe.get("models", []))
    drafts = {
        str(key).strip(): frozenset(str(model).strip() for model in slugs)
        for key, slugs in dict(probe.get("draft_models", {})).items()
    }
    return Labels(accelerator, gpu_count, engines, simulated, models, drafts)


@dataclass(frozen=True)
class JobNeeds:
    """What a job asks of a runner: the hardware, the engine adapter it launches, the catalog
    release of that engine and the model its store must hold (both empty for the simulated
    engine, which ships with every runner and needs no checkpoint), and for speculative
    decoding the draft model its store must hold for that model and the engine's frontend
    that speculates that way (both empty when the job needs none)."""

    accelerator: str
    gpu_count: int
    engine: str
    engine_version: str = ""
    model: str = ""
    draft_model: str = ""
    frontend: str = ""

    @property
    def series(self) -> str | None:
        """The release series an installed engine must be of; None when any version will do."""
        return version_series(self.engine_version) if self.engine_version else None

    def engine_words(self, engine_name: str = "") -> str:
        """The engine in words: SGLang 0.5, llama.cpp (any build), or the bare name when any
        version will do."""
        name = engine_name or self.engine
        if self.series == BUILD_SERIES:
            return f"{name} ({BUILD_SERIES})"
        return f"{name} {self.series}" if self.series else name

    def wanted(self, engine_name: str, hardware: str) -> str:
        """What a runner must have, in words: "vLLM 0.8 with model llama-3.1-8b on 1 x ...",
        "llama.cpp (any build) through llama-server with model m and draft model d on ..."."""
        frontend = f" through {self.frontend}" if self.frontend else ""
        model = f" with model {self.model}" if self.model else ""
        draft = f" and draft model {self.draft_model}" if self.draft_model else ""
        return f"{self.engine_words(engine_name)}{frontend}{model}{draft} on {hardware}"


def runner_queue(runner_id: int) -> str:
    return f"runner.{runner_id}"


def _series_token(series: str | None) -> str:
    """`.v0.5` or `.any-build`: queue names keep to letters, digits, `.`, `_` and `-` (the
    embedded filesystem broker refuses any other character)."""
    if not series:
        return ""
    return ".any-build" if series == BUILD_SERIES else f".v{series}"


def _token(kind: str, key: str) -> str:
    """`.<kind>-<key>`, with any character a queue name cannot hold as `_` (a custom model's
    checkpoint name, a draft model's hub-style name, have a `/`); empty for no key."""
    return f".{kind}-" + re.sub(r"[^A-Za-z0-9._-]", "_", key) if key else ""


def _model_token(model: str) -> str:
    return _token("model", model)


def _speculation_token(draft_model: str, frontend: str) -> str:
    """`.draft-<key>` for the draft model, then `.frontend-<name>` for the frontend."""
    return _token("draft", draft_model) + _token("frontend", frontend)


def pool_queue(needs: JobNeeds, *, team_id: int) -> str:
    """One pool per (hardware, engine, release series, model, draft model, frontend): only
    runners that have that engine in that series, the model (and the draft model for it) in
    their store and the frontend consume it, so no runner takes a job it would have to refuse."""
    engine = (
        needs.engine
        + _series_token(needs.series)
        + _model_token(needs.model)
        + _speculation_token(needs.draft_model, needs.frontend)
    )
    return f"pool.{team_id}.{needs.accelerator}.{needs.gpu_count}.{engine}"


def pool_sizes(gpu_count: int) -> list[int]:
    """GPU counts of the jobs a runner takes: powers of two up to its own count, and that count.

    A 4-GPU machine also takes 1- and 2-GPU jobs (docs/runner-protocol.md, "Queues and dispatch").
    """
    sizes = {1 << power for power in range(gpu_count.bit_length()) if 1 << power <= gpu_count}
    return sorted(sizes | ({gpu_count} if gpu_count else set()))


def runner_takes(runner_gpu_count: int, job_gpu_count: int) -> bool:
    """Whether a runner with this many GPUs consumes the pool queue of a job of that size."""
    return job_gpu_count in pool_sizes(runner_gpu_count)


def unfit_reason(
    labels: Labels, needs: JobNeeds, *, engine_name: str = "", accelerator_name: str = ""
) -> str | None:
    """Why a runner cannot take a job, in words for the plan page; None when it can."""
    if labels.accelerator != needs.accelerator:
        has = f" (it has {labels.accelerator})" if labels.accelerator else ""
        return f"has no {accelerator_name or needs.accelerator}{has}"
    if not runner_takes(labels.gpu_count, needs.gpu_count):
        sizes = ", ".join(str(size) for size in pool_sizes(labels.gpu_count)) or "none"
        return f"takes jobs of {sizes} GPU(s), not {needs.gpu_count}"
    installed = labels.engines.get(needs.engine)
    if installed is None or (needs.series and not release_accepts(needs.engine_version, installed)):
        has = ", ".join(_engine_with_version(labels, name) for name in sorted(labels.engines))
        return f"lacks {needs.engine_words(engine_name)} (it has {has or 'no engine'})"
    frontends = labels.frontends(needs.engine)
    if needs.frontend and needs.frontend not in frontends:
        has = ", ".join(f"{name} {version}".strip() for name, version in frontends.items())
        words = FRONTEND_WORDS.get(needs.frontend)
        why = f"{words}; " if words else ""
        return f"lacks {needs.frontend} ({why}it has {has or 'no frontend of it'})"
    if needs.model and needs.model not in labels.models:
        has = ", ".join(sorted(labels.models)) or "no model"
        return f"lacks model {needs.model} in its store (it has {has})"
    if needs.draft_model and needs.draft_model not in labels.drafts_for(needs.model):
        has = ", ".join(labels.drafts_for(needs.model)) or "no draft model for it"
        return (
            f"lacks draft model {needs.draft_model} for {needs.model} in its store (it has {has})"
        )
    return None


def _engine_with_version(labels: Labels, engine: str) -> str:
    version = labels.engines.get(engine)
    return f"{engine} {version}" if version and engine != SIMULATED_ENGINE else engine


def _speculation_tokens(labels: Labels, engine: str, model: str) -> list[str]:
    """The model's pool suffixes: none, each draft model the store has for it, and each of
    those with each frontend of the engine the runner has (llama.cpp's only)."""
    drafts = [""] + [_speculation_token(draft, "") for draft in labels.drafts_for(model)]
    frontends = [_speculation_token("", frontend) for frontend in labels.frontends(engine)]
    return drafts + [draft + frontend for frontend in frontends for draft in drafts]


def _engine_pools(labels: Labels) -> list[str]:
    """The simulated engine's pool; for a real engine, its pool and that of its installed
    release series, each once per model in the runner's store (none: no real-engine pools) and
    per draft model and frontend it has for that model."""
    pools = []
    for engine in sorted(labels.engines):
        if engine == SIMULATED_ENGINE:
            pools.append(engine)
            continue
        series = version_series(labels.engines[engine])
        engines = [engine, engine + _series_token(series)] if series else [engine]
        pools += [
            name + _model_token(model) + suffix
            for name in engines
            for model in sorted(labels.models)
            for suffix in _speculation_tokens(labels, engine, model)
        ]
    return pools


def queues_for(*, runner_id: int, team_id: int, labels: Labels) -> list[str]:
    """The runner's own queue and the pools of every size and engine (series) it can take."""
    queues = [runner_queue(runner_id)]
    if labels.accelerator:
        queues += [
            f"pool.{team_id}.{labels.accelerator}.{size}.{engine}"
            for engine in _engine_pools(labels)
            for size in pool_sizes(labels.gpu_count)
        ]
    return queues
