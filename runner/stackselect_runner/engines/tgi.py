"""Hugging Face Text Generation Inference (`text-generation-launcher`).

Flag names from huggingface/text-generation-inference launcher/src/main.rs (`struct Args`, tag
v3.3.7; tests/runner/engine_flags/tgi.json): --model-id, --hostname, --port, --num-shard
(tensor-parallel shards), --dtype (float16, bfloat16), --quantize, --kv-cache-dtype (fp8_e4m3fn,
fp8_e5m2), --max-concurrent-requests, --max-batch-size, --max-batch-prefill-tokens,
--max-total-tokens, --cuda-graphs (batch sizes to capture), --cuda-memory-fraction and
--speculate (n-gram or Medusa tokens). The launcher has no pipeline-, expert- or data-parallel
flag and no flag for prefix caching or chunked prefill, so those settings are refused.

--max-concurrent-requests is not a batch limit: the router refuses every client above it
("Model is overloaded") instead of queueing it, so a load test would record errors where the
stack queues. The stack's batch limit goes to --max-batch-size, and the concurrency limit is
set above any load the harness sends. Version and readiness: GET /info and GET /health.
"""

from __future__ import annotations

from stackselect_domain.tuning import ENGINE_KNOBS

from stackselect_runner.engines.base import LaunchSpec, json_field
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter
from stackselect_runner.engines.stack import (
    StackSettings,
    UnsupportedSetting,
    lookup,
    powers_of_two_up_to,
    refuse_layout_beyond,
)

ENGINE = "tgi"
KNOBS = ENGINE_KNOBS[ENGINE]
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
QUANTIZATIONS = {"fp8": "fp8", "int4_awq": "awq", "int4_gptq": "gptq", "int8": "eetq"}
KV_DTYPES = {"fp8": "fp8_e4m3fn", "fp8_e4m3": "fp8_e4m3fn", "fp8_e5m2": "fp8_e5m2"}
# Queue every request the harness sends (the router refuses clients above this, default 128).
QUEUE_ALL_REQUESTS = 65536
# The launcher's default capture list is 1,2,4,8,16,32 (launcher.md); we extend the powers of
# two up to the stack's largest batch so full-load decode steps replay graphs too.
DEFAULT_CUDA_GRAPH_MAX = 32


def cuda_graph_sizes(settings: StackSettings) -> str | None:
    """A capture limit the stack sets is always passed, so the engine gets what the trial
    records; one derived from the batch limit only when it goes beyond the default list."""
    limit = settings.graph_batch_limit
    derived = settings.cuda_graph_max_batch is None
    if limit is None or (derived and limit <= DEFAULT_CUDA_GRAPH_MAX):
        return None
    return ",".join(str(size) for size in powers_of_two_up_to(limit))


def _refuse_missing_features(settings: StackSettings) -> None:
    refuse_layout_beyond(ENGINE, settings, tp="--num-shard")
    for name in ("prefix_caching", "chunked_prefill"):
        value = getattr(settings, name)
        if value is not None:
            raise UnsupportedSetting(ENGINE, f"has no launcher flag for {name} ({name}={value})")
    spec = settings.speculative
    if spec is not None and spec.method != "ngram":
        raise UnsupportedSetting(
            ENGINE, f"speculates only with n-grams or Medusa heads (speculative={spec.method})"
        )


@register_engine
class TgiAdapter(ServedEngineAdapter):
    slug = ENGINE

    def version(self, launch: LaunchSpec) -> str | None:
        return json_field(launch, "/info", "version")

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        _refuse_missing_features(settings)
        kv = None if settings.kv_is_default else settings.kv_dtype
        flags = Flags(["text-generation-launcher"])
        flags.add("--model-id", settings.model_path or launch.model)
        flags.add("--hostname", launch.host).add("--port", launch.port)
        flags.add("--num-shard", settings.tp)
        if settings.precision in DTYPES:
            flags.add("--dtype", DTYPES[settings.precision])
        elif settings.precision is not None:
            flags.add("--quantize", lookup(ENGINE, QUANTIZATIONS, settings.precision, "--quantize"))
        flags.add("--kv-cache-dtype", kv and lookup(ENGINE, KV_DTYPES, kv, "--kv-cache-dtype"))
        flags.add("--max-concurrent-requests", QUEUE_ALL_REQUESTS)
        flags.add(KNOBS["max_num_seqs"], settings.max_num_seqs)
        flags.add(KNOBS["max_num_batched_tokens"], settings.max_num_batched_tokens)
        flags.add("--max-total-tokens", settings.max_model_len)
        flags.add(KNOBS["cuda_graph_max_batch"], cuda_graph_sizes(settings))
        flags.add("--cuda-memory-fraction", settings.gpu_memory_fraction)
        return flags.add("--speculate", settings.speculative and settings.speculative.num_tokens)
