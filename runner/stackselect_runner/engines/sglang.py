"""SGLang (`python -m sglang.launch_server`).

Flag names from sglang/srt/server_args.py (ServerArgs.add_cli_args) in the sglang 0.5.23
wheel (tests/runner/engine_flags/sglang.json): --model-path, --served-model-name, --tp-size,
--pp-size, --dp-size, --ep-size, --dtype, --quantization, --kv-cache-dtype (auto, fp8_e5m2,
fp8_e4m3, ...), --max-running-requests, --chunked-prefill-size (-1 disables chunked prefill),
--context-length, --disable-radix-cache (prefix caching is on unless disabled),
--mem-fraction-static, --cuda-graph-max-bs-decode (0.5.23 splits the capture limit by phase;
--cuda-graph-max-bs is gone) and the --speculative-* flags. Readiness is /health_generate,
which only answers once a real generation went through, so the first measured request does not
pay for a cold engine.
"""

from __future__ import annotations

import sys

from stackselect_domain.tuning import ENGINE_KNOBS

from stackselect_runner.engines.base import LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter, speculative_flags
from stackselect_runner.engines.stack import StackSettings, UnsupportedSetting, lookup
from stackselect_runner.probe import package_version

ENGINE = "sglang"
KNOBS = ENGINE_KNOBS[ENGINE]
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
QUANTIZATIONS = {
    "fp8": "fp8",
    "fp4": "modelopt_fp4",
    "mxfp4": "mxfp4",
    "int4_awq": "awq",
    "int4_gptq": "gptq",
    "int8": "w8a8_int8",
}
# SGLang documents only the two explicit FP8 formats; plain "fp8" means e4m3 (the OCP default).
KV_DTYPES = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
SPECULATIVE_ALGORITHMS = {
    "draft": "STANDALONE",
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "mtp": "NEXTN",
    "ngram": "NGRAM",
}
CHUNKED_PREFILL_OFF = -1


def _chunk_size(settings: StackSettings) -> int | None:
    """The per-step token budget is SGLang's chunk size; -1 turns chunking off."""
    if settings.chunked_prefill is False:
        return CHUNKED_PREFILL_OFF
    return settings.max_num_batched_tokens


@register_engine
class SglangAdapter(ServedEngineAdapter):
    slug = ENGINE

    def readiness_url(self, launch: LaunchSpec) -> str:
        return launch.base_url + "/health_generate"

    def version(self, launch: LaunchSpec) -> str | None:
        return package_version("sglang")

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        if settings.chunked_prefill is False and settings.max_num_batched_tokens:
            raise UnsupportedSetting(
                ENGINE,
                "sets its token budget through --chunked-prefill-size, which chunked_prefill="
                "false turns off; max_num_batched_tokens cannot apply",
            )
        kv = None if settings.kv_is_default else settings.kv_dtype
        flags = Flags([sys.executable, "-m", "sglang.launch_server"])
        flags.add("--model-path", settings.model_path or launch.model)
        flags.add("--host", launch.host).add("--port", launch.port)
        flags.add("--served-model-name", launch.served_name)
        flags.add("--tp-size", settings.tp).add("--pp-size", settings.pp)
        flags.add("--dp-size", settings.dp).add("--ep-size", settings.ep)
        if settings.precision in DTYPES:
            flags.add("--dtype", DTYPES[settings.precision])
        elif settings.precision is not None:
            quantization = lookup(ENGINE, QUANTIZATIONS, settings.precision, "--quantization")
            flags.add("--quantization", quantization)
        flags.add("--kv-cache-dtype", kv and lookup(ENGINE, KV_DTYPES, kv, "--kv-cache-dtype"))
        flags.add(KNOBS["max_num_seqs"], settings.max_num_seqs)
        flags.add(KNOBS["max_num_batched_tokens"], _chunk_size(settings))
        flags.add("--context-length", settings.max_model_len)
        flags.switch("--disable-radix-cache", None, settings.prefix_caching is False or None)
        flags.add("--mem-fraction-static", settings.gpu_memory_fraction)
        # Recommended: capture CUDA graphs up to the largest batch the stack runs (or the
        # stack's own capture limit), so decode steps at full load replay graphs.
        flags.add(KNOBS["cuda_graph_max_batch"], settings.graph_batch_limit)
        flags.extend(
            speculative_flags(
                settings, SPECULATIVE_ALGORITHMS, draft_model_flag="--speculative-draft-model-path"
            )
        )
        return flags
