"""LMDeploy (`lmdeploy serve api_server`).

Flag names from lmdeploy/cli/utils.py (ArgumentHelper) as used by lmdeploy/cli/serve.py in
the lmdeploy 0.18.0 wheel (tests/runner/engine_flags/lmdeploy.json): --server-name,
--server-port, --model-name, --backend (turbomind | pytorch), --tp, --dp, --ep, --dtype (auto,
float16, bfloat16), --model-format (hf, awq, gptq, fp8, mxfp4), --quant-policy (0, 4 or 8: KV
cache in 16-bit, int4 or int8), --max-batch-size, --max-prefill-token-num, --session-len,
--cache-max-entry-count (default 0.8), --enable-prefix-caching and
--cudagraph-capture-batch-sizes (one or more sizes, read by the PyTorch engine's CUDA-graph
runner; the adapter sets it on the PyTorch backend only and refuses a capture limit on
TurboMind, where the flag has no documented effect). LMDeploy has no pipeline-parallel flag and
always splits long prefills by --max-prefill-token-num; the adapter maps neither its
--speculative-* flags nor its FP8 --quant-policy values (16, 17) yet: those settings are
refused.
"""

from __future__ import annotations

from stackselect_runner.engines.base import LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter
from stackselect_runner.engines.stack import (
    StackSettings,
    UnsupportedSetting,
    lookup,
    powers_of_two_up_to,
    refuse_layout_beyond,
)
from stackselect_runner.probe import package_version

ENGINE = "lmdeploy"
# Recommended: LMDeploy's documented KV share of free memory, explicit for the identity.
CACHE_MAX_ENTRY_COUNT = 0.8
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
MODEL_FORMATS = {"int4_awq": "awq", "int4_gptq": "gptq", "fp8": "fp8", "mxfp4": "mxfp4"}
QUANT_POLICIES = {"int8": "8", "int4": "4"}
# TurboMind is LMDeploy's default and faster backend; the FP8 and MXFP4 formats run on PyTorch.
PYTORCH_ONLY_FORMATS = frozenset({"fp8", "mxfp4"})


def _refuse_missing_features(settings: StackSettings) -> None:
    refuse_layout_beyond(ENGINE, settings, tp="--tp", ep="--ep", dp="--dp")
    if settings.speculative is not None:
        raise UnsupportedSetting(
            ENGINE,
            f"speculative decoding is not mapped by this adapter ({settings.speculative.method})",
        )
    if settings.chunked_prefill is False:
        raise UnsupportedSetting(
            ENGINE, "always splits prefills by --max-prefill-token-num (chunked_prefill=false)"
        )


def _capture_sizes(settings: StackSettings, backend: str) -> Flags:
    """The PyTorch engine's capture list up to the stack's limit; refused on TurboMind."""
    flags = Flags()
    limit = settings.cuda_graph_max_batch
    if limit is None:
        return flags
    if backend != "pytorch":
        raise UnsupportedSetting(
            ENGINE,
            f"(TurboMind) documents no CUDA-graph capture flag (cuda_graph_max_batch={limit})",
        )
    flags.append("--cudagraph-capture-batch-sizes")
    flags.extend(str(size) for size in powers_of_two_up_to(limit))
    return flags


@register_engine
class LmdeployAdapter(ServedEngineAdapter):
    slug = ENGINE

    def readiness_url(self, launch: LaunchSpec) -> str:
        return launch.base_url + "/v1/models"

    def version(self, launch: LaunchSpec) -> str | None:
        return package_version("lmdeploy")

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        _refuse_missing_features(settings)
        model_format = None
        if settings.precision is not None and settings.precision not in DTYPES:
            model_format = lookup(ENGINE, MODEL_FORMATS, settings.precision, "--model-format")
        backend = "pytorch" if model_format in PYTORCH_ONLY_FORMATS else "turbomind"
        kv = None if settings.kv_is_default else settings.kv_dtype
        flags = Flags(["lmdeploy", "serve", "api_server", settings.model_path or launch.model])
        flags.add("--server-name", launch.host).add("--server-port", launch.port)
        flags.add("--model-name", launch.served_name).add("--backend", backend)
        flags.add("--tp", settings.tp).add("--dp", settings.dp).add("--ep", settings.ep)
        flags.add("--dtype", DTYPES.get(settings.precision or ""))
        flags.add("--model-format", model_format)
        flags.add("--quant-policy", kv and lookup(ENGINE, QUANT_POLICIES, kv, "--quant-policy"))
        flags.add("--max-batch-size", settings.max_num_seqs)
        flags.add("--max-prefill-token-num", settings.max_num_batched_tokens)
        flags.extend(_capture_sizes(settings, backend))
        flags.add("--session-len", settings.max_model_len)
        fraction = settings.gpu_memory_fraction or CACHE_MAX_ENTRY_COUNT
        flags.add("--cache-max-entry-count", fraction)
        return flags.switch("--enable-prefix-caching", None, settings.prefix_caching)
