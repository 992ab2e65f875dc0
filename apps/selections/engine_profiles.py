"""How each serving engine turns the roofline into step times: host overhead and CUDA graphs.

The roofline (estimator.build_step_cost) prices the GPU work of a step; what differs between
engines on the same layout is the host time around it (Python or C++ scheduling, kernel
launches) and whether decode steps are replayed as captured CUDA graphs, which removes most of
the launch cost. The scheduler itself (token budget, sequence budget, chunked prefill, prefix
caching, KV block size) comes from the catalog release (catalog_adapter.engine_config), not
from here.

Every figure below names where it comes from. The overheads in milliseconds are our judgement
(no engine documents its per-step host time), ordered by what the engines' documentation says
about their runtimes; the CUDA-graph batch limits are the engines' documented defaults where we
found them, and marked as judgement where we did not. No per-engine bandwidth or compute factor
is recorded: kernel efficiency per engine comes from measured kernel data or the team's own
calibrated runs, never from a guess here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from apps.selections.estimator import Efficiency


@dataclass(frozen=True)
class EngineProfile:
    """Per-step host overhead without and with CUDA graphs, and the graphs' batch limit."""

    engine: str
    eager_overhead_ms: float
    graph_overhead_ms: float
    graph_max_batch: int
    basis: str

    def __post_init__(self) -> None:
        if not 0 <= self.graph_overhead_ms <= self.eager_overhead_ms:
            raise ValueError("graph_overhead_ms: must be between 0 and eager_overhead_ms")
        if self.graph_max_batch < 0:
            raise ValueError("graph_max_batch: must not be negative")

    @property
    def graph_saving_ms(self) -> float:
        return self.eager_overhead_ms - self.graph_overhead_ms if self.graph_max_batch else 0.0

    def efficiency(self) -> Efficiency:
        """The roofline's default factors with this engine's eager step overhead."""
        return replace(Efficiency(), overhead_ms=self.eager_overhead_ms)


_JUDGEMENT = "overheads are our judgement, not measured"

PROFILES: dict[str, EngineProfile] = {
    profile.engine: profile
    for profile in (
        EngineProfile(
            "vllm",
            eager_overhead_ms=2.0,
            graph_overhead_ms=0.6,
            graph_max_batch=512,
            basis=(
                "vLLM captures CUDA graphs for decode-only batches up to its largest capture "
                "size, capped at max_num_seqs (vllm/v1/worker/gpu/cudagraph_utils.py, "
                "docs.vllm.ai v0.13.0 API page); 512 as the largest default capture size is our "
                f"reading of vllm/config/compilation.py, not pinned to 0.33.0; {_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "sglang",
            eager_overhead_ms=2.0,
            graph_overhead_ms=0.5,
            graph_max_batch=256,
            basis=(
                "SGLang enables CUDA graphs for decode by default (SGLang docs, 'CUDA Graph "
                "for Decode'); its cuda_graph_max_bs is tuned to GPU memory at start-up, so "
                f"256 is our judgement; {_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "tensorrt-llm",
            eager_overhead_ms=1.5,
            graph_overhead_ms=0.5,
            graph_max_batch=128,
            basis=(
                "TensorRT-LLM's DecodeCudaGraphConfig captures decode batches up to "
                "max_batch_size, 128 when none is given (nvidia.github.io/TensorRT-LLM "
                "1.3.0rc27 llm-api reference); that trtllm-serve turns graphs on by default "
                f"is our reading; {_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "lmdeploy",
            eager_overhead_ms=1.0,
            graph_overhead_ms=1.0,
            graph_max_batch=0,
            basis=(
                "LMDeploy's TurboMind engine schedules in C++ (github.com/InternLM/lmdeploy "
                "README), so one lower host overhead for every step and no separate graph "
                f"saving is modelled; {_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "tgi",
            eager_overhead_ms=2.5,
            graph_overhead_ms=0.8,
            graph_max_batch=32,
            basis=(
                "TGI's launcher captures CUDA graphs for batch sizes 1 to 32 by default "
                "(--cuda-graphs, text-generation-inference launcher docs, as we recall them: "
                "not re-checked); its Rust router adds a hop before the Python server; "
                f"{_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "llama-cpp",
            eager_overhead_ms=1.0,
            graph_overhead_ms=0.4,
            graph_max_batch=1,
            basis=(
                "llama.cpp's CUDA backend replays graphs for single-token decode only "
                "(ggml-cuda graph support, as we understand it: not re-checked); a C++ "
                f"server; {_JUDGEMENT}"
            ),
        ),
        EngineProfile(
            "ollama",
            eager_overhead_ms=1.5,
            graph_overhead_ms=0.9,
            graph_max_batch=1,
            basis=(
                "Ollama runs llama.cpp's kernels behind its own Go server, so llama.cpp's "
                f"profile plus a hop; {_JUDGEMENT}"
            ),
        ),
    )
}

DEFAULT_PROFILE = EngineProfile(
    "",
    eager_overhead_ms=Efficiency().overhead_ms,
    graph_overhead_ms=Efficiency().overhead_ms,
    graph_max_batch=0,
    basis="no profile recorded for this engine: the roofline's default 2 ms per step, no graphs",
)


def engine_profile(engine_slug: str) -> EngineProfile:
    return PROFILES.get(engine_slug, DEFAULT_PROFILE)
