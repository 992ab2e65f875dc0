"""Vocabularies of the capability matrix."""

from django.db import models
from stackselect_domain.vocabulary import SCENARIO_FIXED_CONCURRENCY, SCENARIO_MAX_THROUGHPUT


class EngineKind(models.TextChoices):
    ENGINE = "engine", "Serving engine"
    ORCHESTRATOR = "orchestrator", "Orchestrator"
    KV_RUNTIME = "kv_runtime", "KV runtime"
    KERNEL_LIBRARY = "kernel_library", "Kernel library"


class ProjectStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    MAINTENANCE = "maintenance", "Maintenance mode"
    ARCHIVED = "archived", "Archived"


class Vendor(models.TextChoices):
    NVIDIA = "nvidia", "NVIDIA"
    AMD = "amd", "AMD"
    INTEL = "intel", "Intel"
    GOOGLE = "google", "Google"
    APPLE = "apple", "Apple"
    AWS = "aws", "AWS"
    HUAWEI = "huawei", "Huawei"
    CPU = "cpu", "CPU"


class Contract(models.TextChoices):
    """The six contracts of docs/domain.md section 2, plus hardware reach and model formats."""

    SCHEDULER = "scheduler", "Scheduler"
    KV = "kv", "KV"
    PARALLEL_MOE = "parallel_moe", "Parallelism and MoE"
    KERNEL_PRECISION = "kernel_precision", "Kernels and precision"
    API_AGENT = "api_agent", "API and agent"
    OPERATIONS = "operations", "Operations"
    HARDWARE = "hardware", "Hardware"
    MODEL_FORMAT = "model_format", "Model format"


class Maturity(models.TextChoices):
    STABLE = "stable", "Stable"
    BETA = "beta", "Beta"
    EXPERIMENTAL = "experimental", "Experimental"
    DEPRECATED = "deprecated", "Deprecated"
    UNSUPPORTED = "unsupported", "Unsupported"
    UNKNOWN = "unknown", "Unknown"


# How far a maturity goes toward "use it in production": a requirement of `beta` is met by
# stable or beta. Deprecated, unsupported and unknown meet no requirement.
MATURITY_RANK: dict[str, int] = {
    Maturity.STABLE: 3,
    Maturity.BETA: 2,
    Maturity.EXPERIMENTAL: 1,
    Maturity.DEPRECATED: 0,
    Maturity.UNSUPPORTED: 0,
    Maturity.UNKNOWN: 0,
}


def maturity_meets(maturity: str, minimum: str) -> bool:
    return MATURITY_RANK[maturity] > 0 and MATURITY_RANK[maturity] >= MATURITY_RANK[minimum]


class AttentionKind(models.TextChoices):
    MHA = "mha", "Multi-head attention"
    GQA = "gqa", "Grouped-query attention"
    MLA = "mla", "Multi-head latent attention"
    SLIDING = "sliding", "Sliding window (interleaved)"


class PrefixCacheKind(models.TextChoices):
    HASH_BLOCKS = "hash_blocks", "Hashed KV blocks"
    RADIX_TREE = "radix_tree", "Radix tree"
    PER_SLOT = "per_slot", "Per-slot prompt cache"
    NONE = "none", "None"


class UnchunkedLimit(models.TextChoices):
    """What must fit in one step's token budget when an engine does not chunk prompts (engines
    differ: a request over it is refused on arrival)."""

    SEQUENCE = "sequence", "Prompt and output together (vLLM: max_model_len within the budget)"
    PROMPT = "prompt", "The prompt (TensorRT-LLM: prompt length within max_num_tokens)"


class MemoryBasis(models.TextChoices):
    """What an engine's default memory fraction is a share of (engines differ, so a single
    0.9 of total memory over- or under-states the KV cache)."""

    TOTAL = "total", "Share of all memory: weights, activations, KV (vLLM)"
    STATIC = "static", "Share of all memory: weights and KV pool (SGLang)"
    FREE = "free", "Share of memory left after weights (TensorRT-LLM, LMDeploy)"


class PublishedScenario(models.TextChoices):
    """How a published measurement loaded the engine."""

    FIXED_CONCURRENCY = SCENARIO_FIXED_CONCURRENCY, "a fixed number of clients (closed loop)"
    MAX_THROUGHPUT = SCENARIO_MAX_THROUGHPUT, "maximum load (every request queued at once)"
