"""LMDeploy (`lmdeploy serve api_server`).

Flag names from lmdeploy/cli/utils.py (ArgumentHelper) as used by lmdeploy/cli/serve.py in
the lmdeploy 0.18.0 wheel (tests/runner/engine_flags/lmdeploy.json): --server-name,
--server-port, --model-name, --backend (turbomind | pytorch), --tp, --dp, --ep, --dtype (auto,
float16, bfloat16), --model-format (hf, awq, gptq, fp8, mxfp4), --quant-policy (the KV cache's
QuantPolicy in lmdeploy/messages.py: 4 int4, 8 int8, 16 FP8 float8_e4m3fn, 17 FP8
float8_e5m2), --max-batch-size, --max-prefill-token-num, --session-len,
--cache-max-entry-count (default 0.8), --enable-prefix-caching,
--cudagraph-capture-batch-sizes (one or more sizes, read by the PyTorch engine's CUDA-graph
runner) and the speculative group: --speculative-algorithm (eagle, eagle3, deepseek_mtp,
hy3_mtp, qwen3_5_mtp, dflash), --speculative-draft-model, --speculative-num-draft-tokens.

The backend is TurboMind, LMDeploy's default and faster engine, unless the stack needs what only
the PyTorch engine runs: FP8 or MXFP4 weights, an FP8 KV cache (TurbomindEngineConfig asserts
that QuantPolicy FP8 and FP8_E5M2 are "not supported" on TurboMind) or speculative decoding
(lmdeploy/serve/core/async_engine.py only warns "speculative decoding is not supported by
turbomind" and serves without it; docs/en/advance/spec_decoding.md serves with --backend
pytorch). Those semantics were read in LMDeploy's repository at commit 1263d5cd (2026-08-21,
version 0.16.0, the newest snapshot at hand; the 0.18.0 flag set has the same --quant-policy
values and a superset of its speculative algorithms). A CUDA-graph capture limit is refused on
TurboMind, where no flag sets it. Speculative methods map to eagle and eagle3 (with the draft
model); LMDeploy has no plain draft-model or n-gram proposer, and its MTP proposers are per
model family (deepseek_mtp, hy3_mtp, qwen3_5_mtp), which the stack's "mtp" does not name: those
are refused by name. LMDeploy has no pipeline-parallel flag and always splits long prefills by
--max-prefill-token-num.
The backend choice is stackselect_domain.tuning.engine_backend, which the planner uses too; the
tuning knobs' flag names come from its ENGINE_KNOBS table.
"""

from __future__ import annotations

from stackselect_domain.tuning import ENGINE_KNOBS, backend_knobs, engine_backend, engine_label

from stackselect_runner.engines.base import LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter, speculative_flags
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
# KV word -> QuantPolicy; plain "fp8" is FP8 (float8_e4m3fn), as LMDeploy's own alias "fp8" is.
QUANT_POLICIES = {"int8": "8", "int4": "4", "fp8": "16", "fp8_e4m3": "16", "fp8_e5m2": "17"}
KNOBS = ENGINE_KNOBS[ENGINE]
SPECULATIVE_ALGORITHMS = {"eagle": "eagle", "eagle3": "eagle3"}
SPECULATIVE_REFUSALS = {
    "draft": "has no plain draft-model proposer (speculative=draft)",
    "ngram": "has no n-gram proposer (speculative=ngram)",
    "mtp": "names its MTP proposers per model family (deepseek_mtp, hy3_mtp, qwen3_5_mtp); "
    "the stack's speculative=mtp does not say which",
}


def _refuse_missing_features(settings: StackSettings) -> None:
    refuse_layout_beyond(ENGINE, settings, tp="--tp", ep="--ep", dp="--dp")
    if settings.speculative is not None and settings.speculative.method in SPECULATIVE_REFUSALS:
        raise UnsupportedSetting(ENGINE, SPECULATIVE_REFUSALS[settings.speculative.method])
    if settings.chunked_prefill is False:
        raise UnsupportedSetting(
            ENGINE, "always splits prefills by --max-prefill-token-num (chunked_prefill=false)"
        )


def _capture_sizes(settings: StackSettings, backend: str | None) -> Flags:
    """The PyTorch engine's capture list up to the stack's limit; refused on TurboMind."""
    flags = Flags()
    limit = settings.cuda_graph_max_batch
    if limit is None:
        return flags
    knob = (backend_knobs(ENGINE, backend) or {}).get("cuda_graph_max_batch")
    if knob is None:
        raise UnsupportedSetting(
            engine_label(ENGINE, backend),
            f"has no CUDA-graph capture flag (cuda_graph_max_batch={limit})",
        )
    flags.append(knob)
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
        kv = None if settings.kv_is_default else settings.kv_dtype
        backend = engine_backend(
            ENGINE,
            precision=settings.precision,
            kv_dtype=kv,
            speculative=settings.speculative is not None,
        )
        flags = Flags(["lmdeploy", "serve", "api_server", settings.model_path or launch.model])
        flags.add("--server-name", launch.host).add("--server-port", launch.port)
        flags.add("--model-name", launch.served_name).add("--backend", backend)
        flags.add("--tp", settings.tp).add("--dp", settings.dp).add("--ep", settings.ep)
        flags.add("--dtype", DTYPES.get(settings.precision or ""))
        flags.add("--model-format", model_format)
        flags.add("--quant-policy", kv and lookup(ENGINE, QUANT_POLICIES, kv, "--quant-policy"))
        flags.add(KNOBS["max_num_seqs"], settings.max_num_seqs)
        flags.add(KNOBS["max_num_batched_tokens"], settings.max_num_batched_tokens)
        flags.extend(_capture_sizes(settings, backend))
        flags.add("--session-len", settings.max_model_len)
        fraction = settings.gpu_memory_fraction or CACHE_MAX_ENTRY_COUNT
        flags.add("--cache-max-entry-count", fraction)
        flags.switch("--enable-prefix-caching", None, settings.prefix_caching)
        flags.extend(
            speculative_flags(
                settings, SPECULATIVE_ALGORITHMS, draft_model_flag="--speculative-draft-model"
            )
        )
        return flags
