"""Predicting a maximum-load published cell: output tokens/s per GPU, by a named method.

The TensorRT-LLM performance overview (apps/catalog/published_overview.py) ran `trtllm-bench
throughput`: every request queued at once, with the batch settings trtllm-bench derives itself,
and output tokens counted over the whole run. We predict a cell by simulating that run
(apps/selections/trtllm_bench.py: the settings and the request count) on the method's step
times: as many requests in flight as the batch limit and the KV cache admit at ISL + OSL each (no
request is evicted), the stated requests shared among the replicas. A replica spans tp x pp GPUs
(attention-DP ranks are replicas side by side), so the figure per GPU is the replica's output
tokens/s over tp x pp; a pp-stage replica's tokens/s is pp times that of one micro-batch
scheduler (steady_state.micro_batch_config), which runs 1/pp of the replica's requests.

This compares like with like: the same step times at steady state (the candidate list's
capacity) would read higher wherever the stated run is only a few batches long.

Where the overview states a setting we use it; where it does not, the assumption is named here.
"""

from __future__ import annotations

from dataclasses import dataclass

from stackselect_domain.steptime import METHOD_AICONFIGURATOR, METHOD_ROOFLINE, StepTimeProvider
from stackselect_domain.workload import ClosedLoop, FixedLength, Workload, generate_requests

from apps.catalog.models import Accelerator, ModelSpec
from apps.catalog.published_overview import OverviewRow
from apps.selections.aiconfigurator_provider import AicStack, aiconfigurator_step_time
from apps.selections.catalog_adapter import accelerator_spec, default_kv_dtype, model_arch
from apps.selections.estimator import MEMORY_BASIS_FREE, Parallelism, estimate_memory
from apps.selections.published_predict import stated_parallelism
from apps.selections.simulator import EngineConfig, simulate
from apps.selections.steady_state import micro_batch_config, saturating_clients
from apps.selections.steptime_providers import StackInputs, roofline_provider
from apps.selections.trtllm_bench import bench_settings, stated_requests

ENGINE = "tensorrt-llm"
# The catalog's TensorRT-LLM release: the overview names none, so the step times are asked for
# the release a team would deploy (AIConfigurator answers from its nearest measured version).
ENGINE_VERSION = "1.2.1"
# The overview: "--kv_cache_free_gpu_mem_fraction 0.95" in many cases (0.90 on out-of-memory),
# a share of the memory left free after the weights, as TensorRT-LLM's KvCacheConfig counts it.
KV_FRACTION = 0.95
# The overview's stated kv_cache_config for these models (gpt-oss: fp8 on Blackwell, "auto" on
# Hopper; DeepSeek-R1: fp8); the others keep the checkpoint's own. RTX PRO 6000
# (`blackwell-rtx`) has no entry: the overview states no kv_cache_config for it, and its cells
# are Llama-3.3-70B and Qwen3 only, so they keep the checkpoint's own.
FP8_KV_FAMILIES = {
    "deepseek-r1": ("hopper", "blackwell"),
    "gpt-oss-120b": ("blackwell",),
    "gpt-oss-20b": ("blackwell",),
}
KV_BLOCK_TOKENS = 32  # TensorRT-LLM's KvCacheConfig.tokens_per_block default (catalog source)
SEED = 1


@dataclass(frozen=True)
class CapacityPrediction:
    """A method's answer for one cell: output tokens/s per GPU, or None with the reason."""

    method: str
    per_gpu_tokens_s: float | None
    reason: str = ""
    clients: int = 0
    requests: int = 0

    def relative_error(self, published: float) -> float | None:
        if self.per_gpu_tokens_s is None:
            return None
        return (self.per_gpu_tokens_s - published) / published


@dataclass(frozen=True)
class CapacityCell:
    """An overview cell with the catalog rows it names."""

    row: OverviewRow
    model: ModelSpec
    accelerator: Accelerator

    def parallelism(self) -> Parallelism:
        return stated_parallelism(self.row, self.model)

    def kv_dtype(self) -> str:
        if self.accelerator.family in FP8_KV_FAMILIES.get(self.model.slug, ()):
            return "fp8"
        return default_kv_dtype(self.model)

    def stack(self) -> StackInputs:
        return StackInputs(
            model=model_arch(self.model),
            accel=accelerator_spec(self.accelerator),
            precision=self.row.precision,
            kv_dtype=self.kv_dtype(),
            parallelism=self.parallelism(),
            engine=ENGINE,
            engine_version=ENGINE_VERSION,
            catalog_model=self.model,
            accelerator_slug=self.accelerator.slug,
        )


def _provider(
    cell: CapacityCell, stack: StackInputs, method: str, clients: int
) -> StepTimeProvider | None:
    row = cell.row
    if method == METHOD_ROOFLINE:
        return roofline_provider(stack, decode_batch=clients, context=row.isl + row.osl / 2)
    aic_stack = AicStack.on_layout(
        stack.parallelism,
        model=cell.model,
        accelerator_slug=cell.accelerator.slug,
        engine_slug=ENGINE,
        engine_version=ENGINE_VERSION,
        precision=row.precision,
        kv_dtype=stack.kv_dtype,
    )
    return aiconfigurator_step_time(aic_stack).provider


def predict_capacity(cell: CapacityCell, method: str) -> CapacityPrediction:
    """The cell's output tokens/s per GPU by `method` ("roofline" or "aiconfigurator")."""
    if method not in (METHOD_ROOFLINE, METHOD_AICONFIGURATOR):
        raise ValueError(f"method: must be {METHOD_ROOFLINE} or {METHOD_AICONFIGURATOR}")
    row, stack = cell.row, cell.stack()
    memory = estimate_memory(
        **stack.replica(),
        isl=row.isl,
        osl=row.osl,
        gpu_memory_utilization=KV_FRACTION,
        memory_basis=MEMORY_BASIS_FREE,
    )
    if not memory.fits:
        return CapacityPrediction(method, None, f"does not fit: {memory.reason}")
    stages = stack.parallelism.pp  # the run is one of the pipeline's micro-batch schedulers
    settings = bench_settings(
        kv_requests=memory.kv_capacity_tokens / (row.isl + row.osl),
        isl=row.isl,
        osl=row.osl,
        pp=stages,
    )
    replica = EngineConfig(
        max_num_batched_tokens=settings.max_num_tokens,
        max_num_seqs=settings.max_batch_size * stages,
        kv_capacity_tokens=memory.kv_capacity_tokens,
        kv_block_size=KV_BLOCK_TOKENS,
        # trtllm-bench does not chunk prompts; its budget always holds one whole prompt beside
        # the batch, so a prompt waits for a step with room for all of it.
        chunked_prefill=False,
        unchunked_prompt_only=True,
        prefix_caching=False,  # random token ids: nothing to reuse
    )
    config = micro_batch_config(replica, stages)
    workload = Workload(FixedLength(row.isl), FixedLength(row.osl), ClosedLoop(1))
    schedulers = stack.parallelism.dp * stages
    requests = -(-stated_requests(row.isl, row.osl) // schedulers)
    clients = min(saturating_clients(workload, config), requests)
    provider = _provider(cell, stack, method, clients)
    if provider is None:
        return CapacityPrediction(method, None, "AIConfigurator has no data for the layout")
    burst = generate_requests(workload, requests, SEED)
    run = simulate(burst, provider, config, concurrency=clients)
    per_gpu = run.summary.output_tokens_per_s * stages / stack.parallelism.replica_gpus
    return CapacityPrediction(method, per_gpu, "", clients, requests)
