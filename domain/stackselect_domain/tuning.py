"""Tuned configurations: the workload class, the settings a sweep tries, and which one wins.

docs/domain.md section 5: each engine runs as its project recommends, not at its defaults. The
catalog records, per engine release, the settings its own documentation recommends for a
workload class, each with its source. A plan may sweep a few settings per candidate; the best
setting under the SLO is kept and candidates are compared at their best. The words swept are
the engine-neutral ones every runner adapter translates into its engine's flags
(runner/stackselect_runner/engines/stack.py); a recommendation in any other word is shown but
not applied.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from stackselect_domain.checks import require_int

WorkloadClass = Literal["long_prompts", "short_chat", "high_concurrency"]
WORKLOAD_CLASSES: tuple[str, ...] = ("long_prompts", "short_chat", "high_concurrency")
# Engine-neutral words a sweep may set: the batch limit, the batched-token budget (chunk) and
# the largest batch captured as a CUDA graph.
TUNABLE: tuple[str, ...] = ("max_num_seqs", "max_num_batched_tokens", "cuda_graph_max_batch")
# Each engine's own knob for a TUNABLE word, as its runner adapter sets it (a command-line flag,
# or a field of TensorRT-LLM's LLM API options file); a word an engine lacks is absent, and its
# adapter refuses it. The adapters read their knob names from this table (the one copy);
# tests/runner/test_engine_knobs.py checks that each sets the word's value through its knob and
# that each knob is a flag (or field) of the engine's pinned release.
ENGINE_KNOBS: dict[str, dict[str, str]] = {
    "vllm": {
        "max_num_seqs": "--max-num-seqs",
        "max_num_batched_tokens": "--max-num-batched-tokens",
        "cuda_graph_max_batch": "--max-cudagraph-capture-size",
    },
    "sglang": {
        "max_num_seqs": "--max-running-requests",
        "max_num_batched_tokens": "--chunked-prefill-size",
        "cuda_graph_max_batch": "--cuda-graph-max-bs-decode",
    },
    "tensorrt-llm": {
        "max_num_seqs": "--max_batch_size",
        "max_num_batched_tokens": "--max_num_tokens",
        "cuda_graph_max_batch": "cuda_graph_config.max_batch_size",
    },
    "lmdeploy": {
        "max_num_seqs": "--max-batch-size",
        "max_num_batched_tokens": "--max-prefill-token-num",
        "cuda_graph_max_batch": "--cudagraph-capture-batch-sizes",
    },
    "tgi": {
        "max_num_seqs": "--max-batch-size",
        "max_num_batched_tokens": "--max-batch-prefill-tokens",
        "cuda_graph_max_batch": "--cuda-graphs",
    },
    "llama-cpp": {
        "max_num_seqs": "--parallel",
        "max_num_batched_tokens": "--batch-size",
    },
}
# LMDeploy serves a stack on TurboMind, its default and faster backend, unless the stack needs
# what only its PyTorch engine runs: FP8 or MXFP4 weights, an FP8 KV cache or speculative
# decoding (its runner adapter, runner/stackselect_runner/engines/lmdeploy.py, says where
# LMDeploy documents each). The planner and the adapter both choose by engine_backend.
LMDEPLOY_PYTORCH_PRECISIONS = frozenset({"fp8", "mxfp4"})
LMDEPLOY_PYTORCH_KV = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2"})
BACKEND_NAMES = {"turbomind": "TurboMind", "pytorch": "PyTorch"}
# TUNABLE words only one backend of an engine reads ({engine: {word: backend}}): LMDeploy's
# capture list is read by the PyTorch engine's CUDA-graph runner; TurboMind has no such flag.
BACKEND_ONLY_KNOBS: dict[str, dict[str, str]] = {"lmdeploy": {"cuda_graph_max_batch": "pytorch"}}
# Our thresholds for naming a workload's class (not an engine's): prompts of 4k tokens and
# more are "long"; 64 or more requests in flight are "high concurrency".
LONG_PROMPT_TOKENS = 4096
HIGH_CONCURRENCY = 64
MAX_SWEEP = 8
Origin = Literal["defaults", "recommended", "sweep"]


def workload_class(*, mean_isl: float, in_flight: float | None) -> WorkloadClass:
    """Which documented recommendation applies: long prompts first, then concurrency."""
    if mean_isl >= LONG_PROMPT_TOKENS:
        return "long_prompts"
    if in_flight is not None and in_flight >= HIGH_CONCURRENCY:
        return "high_concurrency"
    return "short_chat"


def tunable_part(settings: Mapping[str, Any]) -> dict[str, int]:
    """The settings a runner can apply (the TUNABLE words), checked as whole numbers >= 1."""
    return {
        key: require_int(settings[key], f"tuning.{key}", minimum=1)
        for key in TUNABLE
        if key in settings
    }


def engine_knobs(engine: str, settings: Mapping[str, int]) -> dict[str, int]:
    """The settings in the engine's own knob names (empty for an engine without a table,
    such as the simulator)."""
    names = ENGINE_KNOBS.get(engine, {})
    return {names[key]: value for key, value in settings.items() if key in names}


def engine_backend(
    engine: str, *, precision: str | None, kv_dtype: str | None, speculative: bool
) -> str | None:
    """The backend an engine with more than one (LMDeploy) runs the stack on; None otherwise."""
    if engine != "lmdeploy":
        return None
    pytorch = (
        (precision or "").lower() in LMDEPLOY_PYTORCH_PRECISIONS
        or (kv_dtype or "").lower() in LMDEPLOY_PYTORCH_KV
        or speculative
    )
    return "pytorch" if pytorch else "turbomind"


def backend_knobs(engine: str, backend: str | None) -> dict[str, str] | None:
    """The engine's knobs (ENGINE_KNOBS) less those only another of its backends reads; None for
    an engine without a table, such as the simulator."""
    knobs = ENGINE_KNOBS.get(engine)
    if knobs is None:
        return None
    only = BACKEND_ONLY_KNOBS.get(engine, {})
    return {word: knob for word, knob in knobs.items() if only.get(word, backend) == backend}


def engine_label(engine: str, backend: str | None) -> str:
    """The engine as a message names it: "lmdeploy (TurboMind)", or just the slug."""
    return f"{engine} ({BACKEND_NAMES[backend]})" if backend else engine


def check_sweep_values(values: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """A person's sweep: {word: [values]} over the TUNABLE words, at most MAX_SWEEP points."""
    unknown = sorted(set(values) - set(TUNABLE))
    if unknown:
        raise ValueError(f"tuning: unknown setting(s) {', '.join(unknown)}; use {TUNABLE}")
    checked: dict[str, tuple[int, ...]] = {}
    for key, raw in values.items():
        if not isinstance(raw, list | tuple) or not raw:
            raise ValueError(f"tuning.{key}: give a non-empty list of values")
        checked[key] = tuple(sorted({require_int(v, f"tuning.{key}", minimum=1) for v in raw}))
    points = 1
    for options in checked.values():
        points *= len(options)
    if points > MAX_SWEEP:
        raise ValueError(f"tuning: {points} settings to try; at most {MAX_SWEEP} per candidate")
    return checked


@dataclass(frozen=True, slots=True)
class Trial:
    """One setting to run for a candidate: what it sets and where the values came from."""

    settings: dict[str, int]
    origin: Origin
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"settings": dict(self.settings), "origin": self.origin, "source": self.source}


def sweep_trials(
    *,
    recommended: Iterable[Mapping[str, Any]],
    sweep: Mapping[str, Sequence[int]] | None,
) -> list[Trial]:
    """The engine's defaults, each applicable recommendation, then the person's grid; no
    setting twice and at most MAX_SWEEP in all."""
    trials = [Trial({}, "defaults")]
    for entry in recommended:
        settings = tunable_part(entry.get("settings") or {})
        if settings:
            trials.append(Trial(settings, "recommended", entry.get("source")))
    if sweep:
        keys = list(sweep)
        for combination in itertools.product(*(sweep[key] for key in keys)):
            trials.append(Trial(dict(zip(keys, combination, strict=True)), "sweep"))
    unique: list[Trial] = []
    for trial in trials:
        if all(trial.settings != kept.settings for kept in unique):
            unique.append(trial)
    return unique[:MAX_SWEEP]


def best_trial(scores: Sequence[tuple[float | None, float | None]]) -> int | None:
    """Index of the best trial from (max rate meeting the SLO, goodput) pairs: the highest
    max rate wins, goodput breaks ties; None when no trial met the SLO at any load."""
    ranked = [
        (rate, goodput or 0.0, -index)
        for index, (rate, goodput) in enumerate(scores)
        if rate is not None
    ]
    return -max(ranked)[2] if ranked else None
