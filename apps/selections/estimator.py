"""Analytic memory and latency model of one serving replica (roofline with efficiency factors).

Everything here is plain arithmetic on frozen dataclasses, with no Django; the step-time formula
itself is `stackselect_domain.stepcost.StepCost`, which the runner's simulated engine shares.
The numbers are first-order: a calibration step fits `Efficiency` to measurements later, so every
assumption is a named, documented parameter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stackselect_domain.precision import (
    kv_bytes_per_element,
    peak_of_tier,
    weight_precision,
)
from stackselect_domain.prompt_load import ROOFLINE_GEMM_SHARE
from stackselect_domain.stepcost import StepCost
from stackselect_domain.steptime import (
    RooflineStepTime,
    StepFunction,
    StepTimeProvider,
    step_function,
)
from stackselect_domain.vocabulary import ATTENTION_KINDS
from stackselect_domain.words import grouped

LAYOUT_DEGREES = ("tp", "pp", "ep", "dp")
ACTIVATION_BYTES = 2  # activations travel between ranks in 16-bit
GB = 1e9


def _require(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{field}: {message}")


def _triangle(tokens: float) -> float:
    """Sum of contexts 1..n: attention work of a prefill of n tokens from an empty cache."""
    return tokens * (tokens + 1) / 2


@dataclass(frozen=True)
class ModelArch:
    """Shapes of a model checkpoint; parameter counts in billions."""

    params_total_b: float
    params_active_b: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    attention_kind: str = "gqa"
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    experts_total: int = 0
    experts_active: int = 0
    max_context: int | None = None
    vocab_size: int | None = None

    def __post_init__(self) -> None:
        _require(self.params_total_b > 0, "params_total_b", "must be positive")
        _require(
            0 < self.params_active_b <= self.params_total_b,
            "params_active_b",
            "must be positive and at most params_total_b",
        )
        for name in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim"):
            _require(getattr(self, name) >= 1, name, "must be a positive integer")
        _require(
            self.attention_kind in ATTENTION_KINDS,
            "attention_kind",
            f"must be one of {', '.join(ATTENTION_KINDS)}",
        )
        _require(
            self.attention_heads % self.kv_heads == 0,
            "kv_heads",
            "must divide attention_heads",
        )
        if self.attention_kind == "mla":
            for name in ("kv_lora_rank", "qk_rope_head_dim"):
                _require((getattr(self, name) or 0) >= 1, name, "is required for MLA attention")
        if self.attention_kind == "sliding":
            _require((self.sliding_window or 0) >= 1, "sliding_window", "is required for sliding")
            _require(
                1 <= self.sliding_window_layers <= self.layers,
                "sliding_window_layers",
                "must be between 1 and layers for sliding attention",
            )
        _require(
            0 <= self.experts_active <= self.experts_total,
            "experts_active",
            "must be between 0 and experts_total",
        )
        if self.is_moe:
            _require(
                self.params_active_b < self.params_total_b,
                "params_active_b",
                "must be below params_total_b for a mixture-of-experts model",
            )

    @property
    def is_moe(self) -> bool:
        return self.experts_total > self.experts_active > 0

    @property
    def expert_params_b(self) -> float:
        """Parameters of one routed expert summed over all MoE layers.

        Derived from total = dense + E * expert and active = dense + k * expert, so only the
        published totals are needed; shared experts, attention and embeddings count as dense.
        """
        if not self.is_moe:
            return 0.0
        routed_only = self.experts_total - self.experts_active
        return (self.params_total_b - self.params_active_b) / routed_only

    @property
    def dense_params_b(self) -> float:
        return self.params_total_b - self.experts_total * self.expert_params_b


@dataclass(frozen=True)
class AcceleratorSpec:
    """One accelerator: memory in GB, bandwidth in TB/s, dense peak TFLOPS, link in GB/s.

    `interconnect_gbps` is gigabytes per second per direction (NVLink 4 = 450), not gigabits.
    """

    name: str
    memory_gb: float
    bandwidth_tbps: float
    bf16_tflops: float
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    interconnect_gbps: float | None = None

    def __post_init__(self) -> None:
        for name in ("memory_gb", "bandwidth_tbps", "bf16_tflops"):
            _require(getattr(self, name) > 0, name, "must be positive")
        for name in ("fp8_tflops", "fp4_tflops", "interconnect_gbps"):
            value = getattr(self, name)
            _require(value is None or value > 0, name, "must be positive when given")

    def peak_tflops(self, compute: str) -> float:
        """Peak of the tier a precision runs on; a missing low-precision rate falls back a tier."""
        return peak_of_tier(
            compute, bf16=self.bf16_tflops, fp8=self.fp8_tflops, fp4=self.fp4_tflops
        )


@dataclass(frozen=True)
class Parallelism:
    """Degrees of tensor, pipeline, expert and data parallelism.

    A replica spans tp * pp GPUs; dp replicas run side by side (the simulator models one and the
    caller divides the arrival rate by dp). Expert-parallel ranks are drawn from the tp * dp GPUs
    of one pipeline stage, as in vLLM, so ep must divide tp * dp.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp"):
            value = getattr(self, name)
            _require(isinstance(value, int) and value >= 1, name, "must be a positive integer")
        _require((self.tp * self.dp) % self.ep == 0, "ep", "must divide tp * dp")

    @classmethod
    def of_stack(cls, stack: Mapping[str, Any]) -> Parallelism:
        """The layout a stored stack names (Candidate.stack, a job's stack); a degree it omits
        or leaves empty is 1, any other value is checked as given."""
        degrees = {key: stack.get(key) for key in LAYOUT_DEGREES}
        return cls(**{key: 1 if value is None else value for key, value in degrees.items()})

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def schedulers(self) -> int:
        """How many micro-batches a deployment's load spreads over evenly: pp per replica (a
        pipeline keeps one in flight per stage), on each of the dp replicas."""
        return self.dp * self.pp

    @property
    def replica_gpus(self) -> int:
        """The GPUs one replica spans; dp replicas add rate and GPUs alike."""
        return self.tp * self.pp

    @property
    def unit_gpus(self) -> int:
        """The fewest GPUs the layout deploys on: one replica, or where its experts are split
        over attention-data-parallel ranks (ep > tp), the ep ranks that share them, per stage.
        Sizing counts whole units: a replica of an expert-parallel group cannot run alone."""
        return math.lcm(self.tp, self.ep) * self.pp

    @property
    def replicas_run_alone(self) -> bool:
        """True when no expert group spans replicas, so each replica is a deployable unit."""
        return self.unit_gpus == self.replica_gpus

    @property
    def expert_ranks(self) -> int:
        """The GPUs a layer's routed experts are split over: the EP ranks, else the TP ranks."""
        return self.ep if self.ep > 1 else self.tp

    @property
    def expert_token_sources(self) -> int:
        """How many token partitions feed one GPU's experts. TP ranks share their tokens, so
        with ep <= tp a GPU's experts see its replica's tokens alone; with ep > tp (attention
        data parallel) they also take the tokens of ep / tp - 1 other replicas."""
        return max(1, self.ep // self.tp)

    @property
    def needs_interconnect(self) -> bool:
        return self.tp > 1 or self.pp > 1 or self.ep > 1

    def check_model(self, model: ModelArch) -> None:
        """Raise ValueError when this layout cannot shard the model."""
        _require(model.attention_heads % self.tp == 0, "tp", "must divide attention_heads")
        _require(self.pp <= model.layers, "pp", "cannot exceed the number of layers")
        if self.ep > 1:
            _require(model.is_moe, "ep", "expert parallelism needs a mixture-of-experts model")
            _require(model.experts_total % self.ep == 0, "ep", "must divide experts_total")


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak reached in practice, plus fixed per-step costs; calibration refits these.

    The defaults are our starting assumptions, not measurements: about half of peak tensor-core
    throughput in large GEMMs, 70% of HBM and link bandwidth, a 2 ms scheduler/launch overhead per
    engine step and 5 us per collective operation. `expert_compute` is the throughput of a
    mixture-of-experts layer's grouped expert GEMMs as a share of dense GEMMs' (`compute`): the
    tokens scatter over many small per-expert matrices. 0.31 is the median ratio of MoE-kernel
    to dense-GEMM throughput in AIConfigurator's measured kernel tables (aiconfigurator-core
    0.12.0; H100, H200, B200, B300; BF16, FP8, block FP8; 8,192 tokens per step), which
    `bench/expert_gemm_share.py` recomputes (0.20-0.39 per system and precision).
    """

    compute: float = ROOFLINE_GEMM_SHARE
    expert_compute: float = 0.31
    bandwidth: float = 0.7
    comm: float = 0.7
    overhead_ms: float = 2.0
    collective_latency_us: float = 5.0

    def __post_init__(self) -> None:
        for name in ("compute", "expert_compute", "bandwidth", "comm"):
            _require(0 < getattr(self, name) <= 1, name, "must be a fraction in (0, 1]")
        for name in ("overhead_ms", "collective_latency_us"):
            _require(getattr(self, name) >= 0, name, "must not be negative")


@dataclass(frozen=True)
class RuntimeReserve:
    """Memory kept back from the KV cache for activations, CUDA graphs and the framework.

    Reserve = fixed_gb + fraction * accelerator memory, inside the gpu_memory_utilization budget.
    Our assumption, to be calibrated against engines' reported KV capacity.
    """

    fraction: float = 0.03
    fixed_gb: float = 1.5

    def __post_init__(self) -> None:
        _require(0 <= self.fraction < 1, "fraction", "must be in [0, 1)")
        _require(self.fixed_gb >= 0, "fixed_gb", "must not be negative")

    def gb(self, accel: AcceleratorSpec) -> float:
        return self.fixed_gb + self.fraction * accel.memory_gb


# ---------------------------------------------------------------- KV cache


def kv_bytes_per_token(*, model: ModelArch, kv_dtype: str | None = None) -> int:
    """KV bytes of one token over all layers of the whole model (every layer attending to it).

    MHA/GQA/sliding: K and V per KV head per layer. MLA: one compressed latent plus the decoupled
    RoPE key per layer, shared by all heads.
    """
    element = kv_bytes_per_element(kv_dtype)
    if model.attention_kind == "mla":
        latent = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        return model.layers * latent * element
    return 2 * model.layers * model.kv_heads * model.head_dim * element


def kv_bytes_for_context(*, model: ModelArch, kv_dtype: str | None = None, context: int) -> int:
    """KV bytes of one sequence of `context` tokens; sliding layers keep only the window."""
    _require(context >= 0, "context", "must not be negative")
    per_token = kv_bytes_per_token(model=model, kv_dtype=kv_dtype)
    if model.attention_kind != "sliding":
        return per_token * context
    per_layer = per_token // model.layers
    window = min(context, model.sliding_window or 0)
    full_layers = model.layers - model.sliding_window_layers
    return per_layer * (full_layers * context + model.sliding_window_layers * window)


def _kv_context_factor(model: ModelArch, context: float) -> float:
    """Fraction of the all-layer per-token KV that a sequence of this context really holds."""
    if model.attention_kind != "sliding" or context <= 0:
        return 1.0
    window = min(context, model.sliding_window or 0)
    full_layers = model.layers - model.sliding_window_layers
    return (full_layers * context + model.sliding_window_layers * window) / (model.layers * context)


def _kv_shard_fraction(model: ModelArch, parallelism: Parallelism) -> float:
    """Share of a token's KV one GPU holds.

    KV heads split over TP ranks but are replicated once tp exceeds kv_heads; the MLA latent is
    not split by heads, so every TP rank keeps a full copy. Pipeline stages each hold their layers.
    """
    if model.attention_kind == "mla":
        per_tp_rank = 1.0
    else:
        per_tp_rank = max(1 / parallelism.tp, 1 / model.kv_heads)
    return per_tp_rank / parallelism.pp


# ---------------------------------------------------------------- weights


def _weight_bytes(
    model: ModelArch, precision: str, parallelism: Parallelism, expert_share: float
) -> float:
    """Weight bytes one TP rank holds (expert_share=1) or reads, summed over all pipeline stages.

    The dense part splits over TP; routed experts split over EP when ep > 1, otherwise over TP.
    """
    bytes_per_weight = weight_precision(precision).bytes_per_weight
    dense = model.dense_params_b / parallelism.tp
    experts = model.experts_total * model.expert_params_b / parallelism.expert_ranks * expert_share
    return (dense + experts) * GB * bytes_per_weight


def weights_bytes_per_gpu(*, model: ModelArch, precision: str, parallelism: Parallelism) -> float:
    """Resident weight bytes on one GPU."""
    parallelism.check_model(model)
    return _weight_bytes(model, precision, parallelism, 1.0) / parallelism.pp


def experts_touched_fraction(*, model: ModelArch, batch: int) -> float:
    """Expected share of routed experts a decode step of `batch` tokens reads.

    Approximation: each token picks experts_active of experts_total uniformly and independently,
    so an expert stays idle with probability (1 - k/E)^batch. Real routing is skewed, which
    touches fewer experts; calibration absorbs the difference.
    """
    if not model.is_moe:
        return 1.0
    idle = (1 - model.experts_active / model.experts_total) ** max(batch, 1)
    return 1 - idle


def _experts_read(model: ModelArch, parallelism: Parallelism, batch: int) -> float:
    """Share of a GPU's routed experts a decode step of `batch` replica tokens reads: its
    experts also take the tokens of every other replica that feeds them."""
    return experts_touched_fraction(model=model, batch=batch * parallelism.expert_token_sources)


# ---------------------------------------------------------------- memory


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory budget of a replica at the workload context (isl + osl)."""

    weights_gb_per_gpu: float
    runtime_reserve_gb: float
    usable_gb: float
    kv_gb_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    kv_capacity_tokens: int
    max_concurrent_sequences: int
    fits: bool
    reason: str


MEMORY_BASIS_TOTAL = "total"
MEMORY_BASIS_STATIC = "static"
MEMORY_BASIS_FREE = "free"
MEMORY_BASES = (MEMORY_BASIS_TOTAL, MEMORY_BASIS_STATIC, MEMORY_BASIS_FREE)


def _kv_budget_gb(
    memory_gb: float, weights_gb: float, reserve_gb: float, fraction: float, basis: str
) -> tuple[float, float]:
    """(memory the engine may use, of it the KV cache) per GPU under the engine's own rule."""
    if basis == MEMORY_BASIS_FREE:
        left = memory_gb - weights_gb - reserve_gb
        kv_gb = left * fraction if left > 0 else left
        return weights_gb + reserve_gb + max(kv_gb, 0.0), kv_gb
    usable_gb = memory_gb * fraction
    if basis == MEMORY_BASIS_STATIC:
        return usable_gb, usable_gb - weights_gb
    return usable_gb, usable_gb - weights_gb - reserve_gb


def estimate_memory(
    *,
    model: ModelArch,
    accel: AcceleratorSpec,
    precision: str,
    kv_dtype: str | None = None,
    parallelism: Parallelism,
    isl: int,
    osl: int,
    gpu_memory_utilization: float = 0.9,
    memory_basis: str = MEMORY_BASIS_TOTAL,
    reserve: RuntimeReserve | None = None,
) -> MemoryEstimate:
    """Does the model fit, and how many tokens and sequences of isl + osl does the KV cache hold?

    gpu_memory_utilization is the engine's memory fraction and memory_basis what it is a share
    of: "total" (vLLM: weights, activations and KV within fraction x memory), "static" (SGLang:
    weights and the KV pool within it, activations outside) or "free" (TensorRT-LLM, LMDeploy:
    the KV cache takes that share of what weights and activations leave). For sliding attention
    the per-token KV is the effective figure at the workload context, so kv_capacity_tokens
    counts tokens of sequences of that length.
    """
    _require(0 < gpu_memory_utilization <= 1, "gpu_memory_utilization", "must be in (0, 1]")
    _require(memory_basis in MEMORY_BASES, "memory_basis", f"must be one of {MEMORY_BASES}")
    _require(isl >= 1, "isl", "must be at least 1")
    _require(osl >= 1, "osl", "must be at least 1")
    reserve = reserve or RuntimeReserve()
    context = isl + osl
    weights = weights_bytes_per_gpu(model=model, precision=precision, parallelism=parallelism)
    reserve_gb = reserve.gb(accel)
    usable_gb, kv_gb = _kv_budget_gb(
        accel.memory_gb, weights / GB, reserve_gb, gpu_memory_utilization, memory_basis
    )
    shard = _kv_shard_fraction(model, parallelism)
    per_token = kv_bytes_per_token(model=model, kv_dtype=kv_dtype) * shard
    per_token *= _kv_context_factor(model, context)
    per_sequence = kv_bytes_for_context(model=model, kv_dtype=kv_dtype, context=context) * shard
    kv_bytes = max(kv_gb, 0.0) * GB
    capacity_tokens = int(kv_bytes // per_token)
    max_sequences = int(kv_bytes // per_sequence)
    fits, reason = True, "fits"
    if model.max_context is not None and context > model.max_context:
        fits, reason = False, f"isl + osl = {context} exceeds max_context {model.max_context}"
    elif kv_gb <= 0:
        fits = False
        reason = (
            f"weights {weights / GB:.1f} GB + reserve {reserve_gb:.1f} GB per GPU exceed the "
            f"usable {usable_gb:.1f} GB"
        )
    elif max_sequences < 1:
        fits = False
        reason = (
            f"KV cache of {kv_gb:.2f} GB per GPU cannot hold one sequence of "
            f"{grouped(context)} tokens"
        )
    return MemoryEstimate(
        weights_gb_per_gpu=weights / GB,
        runtime_reserve_gb=reserve_gb,
        usable_gb=usable_gb,
        kv_gb_per_gpu=max(kv_gb, 0.0),
        kv_bytes_per_token_per_gpu=per_token,
        kv_capacity_tokens=capacity_tokens,
        max_concurrent_sequences=max_sequences,
        fits=fits,
        reason=reason,
    )


# ---------------------------------------------------------------- step cost


def _attention_flops_per_pair(model: ModelArch) -> float:
    """FLOPs per layer per head for one query token against one context token.

    Scores (q.k) and the weighted value sum are each a multiply-add per dimension. MLA in its
    absorbed decode form scores against the latent plus RoPE key and sums values in the latent.
    """
    if model.attention_kind == "mla":
        latent = model.kv_lora_rank or 0
        return 2 * (latent + (model.qk_rope_head_dim or 0)) + 2 * latent
    return 4 * model.head_dim


def _comm_bytes_per_token(model: ModelArch, parallelism: Parallelism) -> float:
    """Bytes one rank sends per processed token over the interconnect.

    TP: two ring all-reduces of the hidden state per layer (after attention and after the MLP),
    each moving 2 (tp - 1) / tp of the data. EP: dispatch and combine of the hidden state once
    per destination rank (a token's experts_active experts fall on ep (1 - (1 - 1/ep)^k)
    distinct ranks under uniform routing), the (ep - 1) / ep share of which is off-rank; every
    layer is counted as an MoE layer. PP: one hidden-state hand-off per stage boundary.
    """
    hidden = model.hidden_size * ACTIVATION_BYTES
    tp, ep, pp = parallelism.tp, parallelism.ep, parallelism.pp
    tp_bytes = 2 * model.layers * hidden * 2 * (tp - 1) / tp
    ranks_per_token = ep * (1 - (1 - 1 / ep) ** model.experts_active)
    ep_bytes = 2 * model.layers * hidden * ranks_per_token * (ep - 1) / ep
    pp_bytes = (pp - 1) * hidden
    return tp_bytes + ep_bytes + pp_bytes


def _collectives_per_step(model: ModelArch, parallelism: Parallelism) -> int:
    count = parallelism.pp - 1
    if parallelism.tp > 1:
        count += 2 * model.layers
    if parallelism.ep > 1:
        count += 2 * model.layers
    return count


def build_step_cost(
    *,
    model: ModelArch,
    accel: AcceleratorSpec,
    precision: str,
    kv_dtype: str | None = None,
    parallelism: Parallelism,
    efficiency: Efficiency | None = None,
    decode_batch: int = 1,
    context: float,
) -> StepCost:
    """Step cost of one replica, tuned for a typical decode batch and sequence context.

    Two quantities depend on the load and are frozen here to keep the wire formula fixed: the MoE
    expert bytes read per step (experts touched by `decode_batch` tokens) and, for sliding
    attention, the per-token KV and attention work at `context` (window layers stop growing).
    """
    parallelism.check_model(model)
    _require(decode_batch >= 1, "decode_batch", "must be at least 1")
    _require(context >= 1, "context", "must be at least 1")
    efficiency = efficiency or Efficiency()
    if parallelism.needs_interconnect:
        _require(
            accel.interconnect_gbps is not None,
            "interconnect_gbps",
            "is required when tp, pp or ep > 1",
        )
    sources = parallelism.expert_token_sources
    touched = _experts_read(model, parallelism, decode_batch)
    # Per token of its replica a GPU computes its experts' share of experts_active experts, for
    # the tokens of every replica that feeds them. The wire formula has one compute rate: expert
    # GEMMs, which reach expert_compute of it, count as that much more work.
    expert_share = sources / parallelism.expert_ranks / efficiency.expert_compute
    work_params = (
        model.dense_params_b / parallelism.tp
        + model.experts_active * model.expert_params_b * expert_share
    )
    context_factor = _kv_context_factor(model, context)
    shard = _kv_shard_fraction(model, parallelism) * parallelism.pp
    kv_per_token = kv_bytes_per_token(model=model, kv_dtype=kv_dtype) * shard * context_factor
    attn_pairs = _attention_flops_per_pair(model) * model.attention_heads / parallelism.tp
    link_bytes_per_s = (accel.interconnect_gbps or 0.0) * GB * efficiency.comm
    comm_bytes = _comm_bytes_per_token(model, parallelism)
    peak = accel.peak_tflops(weight_precision(precision).compute)
    collective_s = _collectives_per_step(model, parallelism) * efficiency.collective_latency_us
    return StepCost(
        weight_bytes=_weight_bytes(model, precision, parallelism, touched),
        kv_bytes_per_token=kv_per_token,
        flops_per_token=2 * work_params * GB,
        attn_flops_per_token_ctx=attn_pairs * model.layers * context_factor,
        hbm_bytes_per_s=accel.bandwidth_tbps * 1e12 * efficiency.bandwidth,
        flops_per_s=peak * 1e12 * efficiency.compute,
        comm_s_per_token=comm_bytes / link_bytes_per_s if comm_bytes else 0.0,
        step_overhead_s=efficiency.overhead_ms / 1e3 + collective_s / 1e6,
    )


# ---------------------------------------------------------------- latency

# (decode batch, mean context) -> the step-time provider for a replica at that load; the batch
# and context freeze the MoE expert reads and sliding-window work, as in build_step_cost.
StepTimeFactory = Callable[[int, float], StepTimeProvider]


@dataclass(frozen=True)
class LatencyEstimate:
    """Steady-state latency of one replica at a fixed concurrency, without queueing."""

    ttft_ms: float
    tpot_ms: float
    prefill_ms: float
    decode_step_ms: float
    bandwidth_floor_tpot_ms: float


def estimate_latency(
    *,
    model: ModelArch,
    accel: AcceleratorSpec,
    precision: str,
    kv_dtype: str | None = None,
    parallelism: Parallelism,
    isl: int,
    osl: int,
    concurrency: int = 1,
    efficiency: Efficiency | None = None,
    step_time: StepTimeFactory | None = None,
    cached_tokens: float = 0.0,
) -> LatencyEstimate:
    """TTFT and TPOT under continuous batching with `concurrency` sequences always in flight.

    The step times come from `step_time` (steptime_providers.step_time_provider for a stack);
    without it, from the plain roofline with `efficiency`.

    - prefill_ms: one request's prompt alone in a step (MoE: experts touched by isl tokens).
    - ttft_ms: that prompt sharing its step with the other concurrency - 1 sequences' decodes.
    - decode_step_ms: a pure decode step of the whole batch at the mean context isl + osl / 2.
    - tpot_ms: the average mixed step: while one sequence decodes osl tokens, each other slot
      turns over once, so (concurrency - 1) * isl / osl prefill tokens ride along per step.
    - bandwidth_floor_tpot_ms: weight bytes read per step over the raw (not derated) bandwidth;
      no step can be faster, so tpot_ms never falls below it.

    `cached_tokens` of a prompt (on average) come from a prefix cache: not computed, but read
    by the attention of the tokens after them.
    """
    _require(isl >= 1, "isl", "must be at least 1")
    _require(0 <= cached_tokens < isl, "cached_tokens", "must be in [0, isl)")
    _require(osl >= 1, "osl", "must be at least 1")
    _require(concurrency >= 1, "concurrency", "must be at least 1")
    mean_context = isl + osl / 2
    others = concurrency - 1

    def roofline(batch: int, context: float) -> StepTimeProvider:
        cost = build_step_cost(
            model=model,
            accel=accel,
            precision=precision,
            kv_dtype=kv_dtype,
            parallelism=parallelism,
            efficiency=efficiency,
            decode_batch=batch,
            context=context,
        )
        return RooflineStepTime(cost)

    def seconds_at(batch: int) -> StepFunction:
        return step_function((step_time or roofline)(batch, mean_context))

    # (prefill tokens, decode sequences, KV tokens read, attention pairs) of each typical step
    computed = isl - cached_tokens
    pairs = _triangle(isl) - _triangle(cached_tokens)
    prefill = seconds_at(isl)(computed, 0, isl, pairs)
    ttft = seconds_at(isl + others)(
        computed, others, isl + others * mean_context, pairs + others * mean_context
    )
    step = seconds_at(concurrency)
    decode_kv = concurrency * mean_context
    decode_step = step(0, concurrency, decode_kv, decode_kv)
    prefills_per_step = others / osl
    tpot = step(
        prefills_per_step * computed,
        concurrency,
        decode_kv + prefills_per_step * isl,
        decode_kv + prefills_per_step * pairs,
    )
    touched = _experts_read(model, parallelism, concurrency)
    floor = _weight_bytes(model, precision, parallelism, touched) / (accel.bandwidth_tbps * 1e12)
    return LatencyEstimate(
        ttft_ms=ttft * 1e3,
        tpot_ms=tpot * 1e3,
        prefill_ms=prefill * 1e3,
        decode_step_ms=decode_step * 1e3,
        bandwidth_floor_tpot_ms=floor * 1e3,
    )


def max_concurrency_at_tpot(
    *,
    target_tpot_ms: float,
    model: ModelArch,
    accel: AcceleratorSpec,
    precision: str,
    kv_dtype: str | None = None,
    parallelism: Parallelism,
    isl: int,
    osl: int,
    efficiency: Efficiency | None = None,
    step_time: StepTimeFactory | None = None,
    upper_bound: int | None = None,
    cached_tokens: float = 0.0,
) -> int:
    """Largest concurrency whose estimated TPOT meets the target; 0 when even one sequence misses.

    The search stops at `upper_bound`, by default the number of isl + osl sequences the KV cache
    holds (estimate_memory with its defaults). TPOT rises with concurrency, so bisection works.
    `cached_tokens` of each prompt come from a prefix cache (estimate_latency).
    """
    _require(target_tpot_ms > 0, "target_tpot_ms", "must be positive")
    deployment = {
        "model": model,
        "accel": accel,
        "precision": precision,
        "kv_dtype": kv_dtype,
        "parallelism": parallelism,
        "isl": isl,
        "osl": osl,
    }
    if upper_bound is None:
        upper_bound = estimate_memory(**deployment).max_concurrent_sequences
    _require(upper_bound >= 0, "upper_bound", "must not be negative")

    def meets(concurrency: int) -> bool:
        estimate = estimate_latency(
            **deployment,
            concurrency=concurrency,
            efficiency=efficiency,
            step_time=step_time,
            cached_tokens=cached_tokens,
        )
        return estimate.tpot_ms <= target_tpot_ms

    return largest_meeting(meets, upper_bound)


def largest_meeting(meets: Callable[[int], bool], upper: int) -> int:
    """Largest n in 1..upper with meets(n), assuming meets is monotone; 0 if meets(1) fails."""
    if upper < 1 or not meets(1):
        return 0
    low, high = 1, upper  # meets(low) holds; the answer is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if meets(middle):
            low = middle
        else:
            high = middle - 1
    return low
