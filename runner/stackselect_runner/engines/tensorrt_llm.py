"""TensorRT-LLM (`trtllm-serve`, PyTorch backend).

Command-line flags from NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py (commit 00209af1;
tests/runner/engine_flags/tensorrt-llm.json):
--host, --port, --backend, --tp_size, --pp_size, --ep_size, --max_batch_size,
--max_num_tokens, --max_seq_len, --kv_cache_free_gpu_memory_fraction (default 0.9),
--enable_chunked_prefill and --extra_llm_api_options (a YAML file of LLM API arguments that
overrides the flags). The KV dtype, KV block reuse (prefix caching), speculative decoding and
CUDA graph settings have no flag and go into that file: `kv_cache_config.dtype`,
`kv_cache_config.enable_block_reuse`, `speculative_config` and `cuda_graph_config`
(tensorrt_llm/llmapi/llm_args.py, commit 00043967; the DeepSeek-R1 serving example in the
TensorRT-LLM docs sets `cuda_graph_config: {enable_padding: true, max_batch_size: ...}`). A
speculative config names its `decoding_type` as the decoding config classes spell it
(Draft_Target, Eagle, Eagle3, MTP, NGram), its draft model `speculative_model` and its draft
length `max_draft_len`. JSON is valid YAML, so
the file is written as JSON. trtllm-serve has no served-model-name or data-parallel flag, and
no weight-quantization flag: a quantized checkpoint brings its own recipe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stackselect_domain.tuning import ENGINE_KNOBS

from stackselect_runner.engines.base import EngineProcess, LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter
from stackselect_runner.engines.stack import (
    StackSettings,
    UnsupportedSetting,
    lookup,
    refuse_layout_beyond,
)
from stackselect_runner.probe import package_version

ENGINE = "tensorrt-llm"
KNOBS = ENGINE_KNOBS[ENGINE]
# Recommended: trtllm-serve's own default fraction, explicit so the identity records it.
KV_CACHE_FREE_GPU_MEMORY_FRACTION = 0.9
KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8"}
DECODING_TYPES = {
    "draft": "Draft_Target",
    "eagle": "Eagle",
    "eagle3": "Eagle3",
    "mtp": "MTP",
    "ngram": "NGram",
}
# Weight precisions a checkpoint may carry; trtllm-serve reads the recipe from the checkpoint.
CHECKPOINT_PRECISIONS = frozenset({"bf16", "fp16", "fp8", "fp4", "mxfp4", "int4_awq", "int4_gptq"})
EXTRA_OPTIONS_FILE = "trtllm-extra-llm-api-options.yaml"


def extra_options_path(launch: LaunchSpec) -> Path:
    return launch.log_path.parent / EXTRA_OPTIONS_FILE


def _speculative_config(settings: StackSettings) -> dict[str, Any] | None:
    spec = settings.speculative
    if spec is None:
        return None
    decoding_type = lookup(ENGINE, DECODING_TYPES, spec.method, "speculative decoding_type")
    config: dict[str, Any] = {"decoding_type": decoding_type, "max_draft_len": spec.num_tokens}
    if spec.draft_model:
        config["speculative_model"] = settings.draft_checkpoint
    return config


def extra_llm_api_options(settings: StackSettings) -> dict[str, Any]:
    """The LLM API arguments that have no trtllm-serve flag."""
    kv_cache: dict[str, Any] = {}
    if not settings.kv_is_default:
        kv_cache["dtype"] = lookup(ENGINE, KV_DTYPES, str(settings.kv_dtype), "kv_cache dtype")
    if settings.prefix_caching is not None:
        kv_cache["enable_block_reuse"] = settings.prefix_caching
    options: dict[str, Any] = {}
    if kv_cache:
        options["kv_cache_config"] = kv_cache
    if settings.graph_batch_limit:
        # Recommended: CUDA graphs padded up to the largest batch the stack runs (or the
        # stack's own capture limit).
        section, field = KNOBS["cuda_graph_max_batch"].split(".")
        options[section] = {"enable_padding": True, field: settings.graph_batch_limit}
    speculative = _speculative_config(settings)
    if speculative:
        options["speculative_config"] = speculative
    return options


@register_engine
class TensorRtLlmAdapter(ServedEngineAdapter):
    slug = ENGINE

    def version(self, launch: LaunchSpec) -> str | None:
        return package_version("tensorrt_llm")

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        refuse_layout_beyond(ENGINE, settings, tp="--tp_size", pp="--pp_size", ep="--ep_size")
        if settings.precision and settings.precision not in CHECKPOINT_PRECISIONS:
            raise UnsupportedSetting(
                ENGINE, f"has no checkpoint recipe for precision {settings.precision!r}"
            )
        flags = Flags(["trtllm-serve", settings.model_path or launch.model])
        flags.add("--host", launch.host).add("--port", launch.port)
        flags.add("--backend", "pytorch")
        flags.add("--tp_size", settings.tp).add("--pp_size", settings.pp)
        flags.add("--ep_size", settings.ep)
        flags.add(KNOBS["max_num_seqs"], settings.max_num_seqs)
        flags.add(KNOBS["max_num_batched_tokens"], settings.max_num_batched_tokens)
        flags.add("--max_seq_len", settings.max_model_len)
        fraction = settings.gpu_memory_fraction or KV_CACHE_FREE_GPU_MEMORY_FRACTION
        flags.add("--kv_cache_free_gpu_memory_fraction", fraction)
        flags.switch("--enable_chunked_prefill", None, settings.chunked_prefill)
        if extra_llm_api_options(settings):
            flags.add("--extra_llm_api_options", extra_options_path(launch))
        return flags

    def effective_config(self, launch: LaunchSpec) -> dict[str, Any]:
        return {
            **super().effective_config(launch),
            "extra_llm_api_options": extra_llm_api_options(self.settings(launch)),
        }

    def start(self, launch: LaunchSpec) -> EngineProcess:
        options = extra_llm_api_options(self.settings(launch))
        if options:
            path = extra_options_path(launch)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(options, indent=2, sort_keys=True))
        return super().start(launch)
