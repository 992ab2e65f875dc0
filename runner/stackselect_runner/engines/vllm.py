"""vLLM (`vllm serve`).

Flag names from vllm/engine/arg_utils.py (EngineArgs.add_cli_args) in the vllm 0.33.0 wheel
(tests/runner/engine_flags/vllm.json): --tensor-parallel-size, --pipeline-parallel-size,
--data-parallel-size, --enable-expert-parallel, --dtype, --quantization, --kv-cache-dtype,
--max-num-seqs, --max-num-batched-tokens, --max-cudagraph-capture-size (CompilationConfig: the
largest batch captured as a CUDA graph), --max-model-len, --enable-chunked-prefill,
--enable-prefix-caching (0.33.0 pairs each with --disable-x and still accepts the --no-enable-x
form passed here), --speculative-config (JSON), --gpu-memory-utilization, --served-model-name.
vLLM has no expert-parallel size: --enable-expert-parallel makes the experts' group the whole
tp x dp group, so any other ep is refused.
"""

from __future__ import annotations

import json

from stackselect_domain.tuning import ENGINE_KNOBS

from stackselect_runner.engines.base import LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter
from stackselect_runner.engines.stack import StackSettings, UnsupportedSetting, lookup

ENGINE = "vllm"
KNOBS = ENGINE_KNOBS[ENGINE]
# Recommended: vLLM's documented default fraction (arg_utils help: "If unspecified, will use
# the default value of 0.9"), set explicitly so the identity records it. CUDA graphs stay on
# (no --enforce-eager), which is vLLM's default and its recommended serving mode.
GPU_MEMORY_UTILIZATION = 0.9
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
# Precision word -> --quantization method (vllm/model_executor/layers/quantization/__init__.py).
QUANTIZATIONS = {
    "fp8": "fp8",
    "fp4": "modelopt_fp4",
    "mxfp4": "mxfp4",
    "int4_awq": "awq",
    "int4_gptq": "gptq",
}
KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
# Our method word -> SpeculativeConfig.method; a plain draft model needs no method.
SPECULATIVE_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "ngram": "ngram"}


def _precision_flags(settings: StackSettings) -> Flags:
    flags = Flags()
    if settings.precision is None:
        return flags
    if settings.precision in DTYPES:
        return flags.add("--dtype", DTYPES[settings.precision])
    method = lookup(ENGINE, QUANTIZATIONS, settings.precision, "--quantization")
    return flags.add("--quantization", method)


def _speculative_config(settings: StackSettings) -> str | None:
    spec = settings.speculative
    if spec is None:
        return None
    config: dict[str, object] = {"num_speculative_tokens": spec.num_tokens}
    if spec.method != "draft":
        config["method"] = SPECULATIVE_METHODS[spec.method]
    if spec.draft_model:
        config["model"] = settings.draft_checkpoint
    return json.dumps(config, sort_keys=True)


@register_engine
class VllmAdapter(ServedEngineAdapter):
    slug = ENGINE

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        expert_parallel = settings.ep > 1
        if expert_parallel and settings.ep != settings.tp * settings.dp:
            raise UnsupportedSetting(
                ENGINE,
                f"has no expert-parallel size flag: --enable-expert-parallel spans tp x dp = "
                f"{settings.tp * settings.dp}, not ep={settings.ep}",
            )
        kv = None if settings.kv_is_default else settings.kv_dtype
        flags = Flags(["vllm", "serve", settings.model_path or launch.model])
        flags.add("--host", launch.host).add("--port", launch.port)
        flags.add("--served-model-name", launch.served_name)
        flags.add("--tensor-parallel-size", settings.tp)
        flags.add("--pipeline-parallel-size", settings.pp)
        flags.add("--data-parallel-size", settings.dp)
        flags.switch("--enable-expert-parallel", None, expert_parallel or None)
        flags.extend(_precision_flags(settings))
        flags.add("--kv-cache-dtype", kv and lookup(ENGINE, KV_DTYPES, kv, "--kv-cache-dtype"))
        flags.add(KNOBS["max_num_seqs"], settings.max_num_seqs)
        flags.add(KNOBS["max_num_batched_tokens"], settings.max_num_batched_tokens)
        # Only when the stack sets it: vLLM sizes its own capture list otherwise.
        flags.add(KNOBS["cuda_graph_max_batch"], settings.cuda_graph_max_batch)
        flags.add("--max-model-len", settings.max_model_len)
        flags.switch(
            "--enable-chunked-prefill", "--no-enable-chunked-prefill", settings.chunked_prefill
        )
        flags.switch(
            "--enable-prefix-caching", "--no-enable-prefix-caching", settings.prefix_caching
        )
        flags.add("--speculative-config", _speculative_config(settings))
        fraction = settings.gpu_memory_fraction or GPU_MEMORY_UTILIZATION
        return flags.add("--gpu-memory-utilization", fraction)
