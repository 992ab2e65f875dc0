"""llama.cpp: its own `llama-server`, or the llama-cpp-python server (`python -m llama_cpp.server`).

Both serve one local GGUF file. `engine.options.frontend` picks one; left out, the runner uses
`llama-server` when it is on PATH, else llama-cpp-python when it is installed.

llama-server flags from ggml-org/llama.cpp tools/server/README.md: -m, --host, --port, --alias,
-c/--ctx-size (shared by all slots), -np/--parallel (slots), -b/--batch-size, --cont-batching,
-ngl/--n-gpu-layers, -sm/--split-mode (layer: pipelined, row: weights split across GPUs),
-ctk/-ctv (KV types f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1),
--cache-prompt/--no-cache-prompt, -md/--model-draft, -t/-tb (threads). Readiness is GET /health
(503 while the model loads). Draft-model speculation takes the names of the llama.cpp that
llama-cpp-python 0.3.36 vendors (its common/arg.cpp): --spec-type draft-simple (without it the
draft model is loaded but no speculator is enabled) and --spec-draft-n-max. That release refuses
the older --draft-max ("the argument has been removed"); builds from before the rename refuse
the new names. tests/runner/test_engine_adapters_flags.py runs that build's own parser on the
commands built here.

llama-cpp-python flags are its ModelSettings/ServerSettings field names (abetlen/llama-cpp-python
llama_cpp/server/settings.py, turned into `--<field>` by llama_cpp/server/cli.py): --model,
--model_alias, --host, --port, --n_ctx, --n_batch, --n_gpu_layers (-1: all), --n_threads,
--n_threads_batch, --type_k/--type_v (ggml type ids), --cache, --draft_model
(prompt-lookup-decoding), --draft_model_num_pred_tokens and --interrupt_requests. It runs one
sequence at a time and has no /health, so readiness is GET /v1/models.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from typing import Any

from stackselect_domain.tuning import ENGINE_KNOBS

from stackselect_runner.engines.base import LaunchSpec
from stackselect_runner.engines.registry import register_engine
from stackselect_runner.engines.served import Flags, ServedEngineAdapter, thread_count
from stackselect_runner.engines.stack import (
    StackSettings,
    UnsupportedSetting,
    lookup,
    refuse_layout_beyond,
)
from stackselect_runner.probe import package_version, parse_llama_server_version, run_command

ENGINE = "llama-cpp"
KNOBS = ENGINE_KNOBS[ENGINE]
LLAMA_SERVER = "llama-server"
LLAMA_CPP_PYTHON = "llama-cpp-python"
FRONTENDS = (LLAMA_SERVER, LLAMA_CPP_PYTHON)
# Weight precisions a GGUF file can hold (the estimator's GGUF words plus 16-bit files).
GGUF_PRECISIONS = frozenset(
    {"bf16", "fp16", "q8_0", "q6_k", "q5_1", "q5_0", "q5_k_m", "q5_k_s", "q4_1", "q4_0"}
    | {"q4_k_m", "q4_k_s", "q3_k_l", "q3_k_m", "q3_k_s", "q2_k"}
)
# KV words -> llama-server cache type; 16-bit words are the default (f16) and need no flag.
SERVER_KV_TYPES = {"q8_0": "q8_0", "q4_0": "q4_0", "q4_1": "q4_1", "q5_0": "q5_0", "q5_1": "q5_1"}
# The same as ggml type ids for llama-cpp-python (enum ggml_type in ggml/include/ggml.h).
PYTHON_KV_TYPES = {"q8_0": "8", "q4_0": "2", "q4_1": "3", "q5_0": "6", "q5_1": "7"}
# Recommended: every layer on the GPU when there is one (llama.cpp's README advises full
# offload for speed; on a CPU-only host the setting has no effect).
ALL_LAYERS_SERVER = 999
ALL_LAYERS_PYTHON = -1


def choose_frontend(settings: StackSettings) -> str:
    if settings.frontend is not None:
        if settings.frontend not in FRONTENDS:
            raise ValueError(f"engine.options.frontend must be one of {', '.join(FRONTENDS)}")
        return settings.frontend
    if shutil.which(LLAMA_SERVER) is None and importlib.util.find_spec("llama_cpp") is not None:
        return LLAMA_CPP_PYTHON
    return LLAMA_SERVER


def gguf_path(settings: StackSettings, launch: LaunchSpec) -> str:
    path = settings.model_path or launch.model
    if not path.endswith(".gguf"):
        raise UnsupportedSetting(
            ENGINE, f"serves a local GGUF file; set engine.options.model_path (model={path!r})"
        )
    return path


def _check_precision(settings: StackSettings) -> None:
    if settings.precision is not None and settings.precision not in GGUF_PRECISIONS:
        raise UnsupportedSetting(ENGINE, f"has no GGUF type for precision {settings.precision!r}")
    if settings.chunked_prefill is False:
        raise UnsupportedSetting(
            ENGINE, "always evaluates prompts in --batch-size chunks (chunked_prefill=false)"
        )
    if settings.cuda_graph_max_batch is not None:
        raise UnsupportedSetting(
            ENGINE,
            f"has no CUDA-graph capture flag (cuda_graph_max_batch="
            f"{settings.cuda_graph_max_batch})",
        )


def llama_server_command(settings: StackSettings, launch: LaunchSpec) -> list[str]:
    refuse_layout_beyond(ENGINE, settings, tp="--split-mode row", pp="--split-mode layer")
    if settings.tp > 1 and settings.pp > 1:
        raise UnsupportedSetting(
            ENGINE, f"splits by rows or by layers, not both (tp={settings.tp}, pp={settings.pp})"
        )
    spec = settings.speculative
    if spec is not None and spec.method != "draft":
        raise UnsupportedSetting(ENGINE, f"speculates only with a draft model ({spec.method})")
    kv = None if settings.kv_is_default else settings.kv_dtype
    kv_type = kv and lookup(ENGINE, SERVER_KV_TYPES, kv, "--cache-type-k/-v")
    slots = settings.max_num_seqs
    flags = Flags([LLAMA_SERVER, "--model", gguf_path(settings, launch)])
    flags.add("--host", launch.host).add("--port", launch.port).add("--alias", launch.served_name)
    # The context is shared by the slots, so each slot gets max_model_len tokens.
    context = settings.max_model_len and settings.max_model_len * (slots or 1)
    flags.add("--ctx-size", context).add(KNOBS["max_num_seqs"], slots)
    flags.add(KNOBS["max_num_batched_tokens"], settings.max_num_batched_tokens)
    flags.append("--cont-batching")
    flags.add("--n-gpu-layers", ALL_LAYERS_SERVER)
    if settings.tp > 1 or settings.pp > 1:
        flags.add("--split-mode", "row" if settings.tp > 1 else "layer")
    flags.add("--cache-type-k", kv_type).add("--cache-type-v", kv_type)
    flags.switch("--cache-prompt", "--no-cache-prompt", settings.prefix_caching)
    if spec is not None:
        flags.add("--model-draft", settings.draft_checkpoint).add("--spec-type", "draft-simple")
        flags.add("--spec-draft-n-max", spec.num_tokens)
    threads = thread_count()
    return flags.add("--threads", threads).add("--threads-batch", threads)


def llama_cpp_python_command(settings: StackSettings, launch: LaunchSpec) -> list[str]:
    refuse_layout_beyond(ENGINE, settings)
    if settings.max_num_seqs is not None and settings.max_num_seqs > 1:
        raise UnsupportedSetting(
            ENGINE,
            f"(llama-cpp-python) serves one sequence at a time (max_num_seqs="
            f"{settings.max_num_seqs}); use frontend llama-server for parallel slots",
        )
    spec = settings.speculative
    if spec is not None and spec.method != "ngram":
        raise UnsupportedSetting(
            ENGINE, f"(llama-cpp-python) speculates only by prompt lookup ({spec.method})"
        )
    kv = None if settings.kv_is_default else settings.kv_dtype
    kv_type = kv and lookup(ENGINE, PYTHON_KV_TYPES, kv, "--type_k/--type_v")
    flags = Flags([sys.executable, "-m", "llama_cpp.server"])
    flags.add("--model", gguf_path(settings, launch)).add("--model_alias", launch.served_name)
    flags.add("--host", launch.host).add("--port", launch.port)
    flags.add("--n_ctx", settings.max_model_len).add("--n_batch", settings.max_num_batched_tokens)
    flags.add("--n_gpu_layers", ALL_LAYERS_PYTHON)
    flags.add("--type_k", kv_type).add("--type_v", kv_type)
    flags.add("--cache", settings.prefix_caching)
    if spec is not None:
        flags.add("--draft_model", "prompt-lookup-decoding")
        flags.add("--draft_model_num_pred_tokens", spec.num_tokens)
    threads = thread_count()
    flags.add("--n_threads", threads).add("--n_threads_batch", threads)
    # Otherwise a new request cancels the stream in flight and concurrent load is cut short.
    return flags.add("--interrupt_requests", False)


@register_engine
class LlamaCppAdapter(ServedEngineAdapter):
    slug = ENGINE

    def frontend(self, launch: LaunchSpec) -> str:
        return choose_frontend(self.settings(launch))

    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]:
        _check_precision(settings)
        if choose_frontend(settings) == LLAMA_CPP_PYTHON:
            return llama_cpp_python_command(settings, launch)
        return llama_server_command(settings, launch)

    def readiness_url(self, launch: LaunchSpec) -> str:
        path = "/v1/models" if self.frontend(launch) == LLAMA_CPP_PYTHON else "/health"
        return launch.base_url + path

    def version(self, launch: LaunchSpec) -> str | None:
        if self.frontend(launch) == LLAMA_CPP_PYTHON:
            version = package_version("llama_cpp_python")
            return f"llama-cpp-python {version}" if version else None
        output = run_command([LLAMA_SERVER, "--version"])
        return parse_llama_server_version(output) if output else None

    def effective_config(self, launch: LaunchSpec) -> dict[str, Any]:
        return {**super().effective_config(launch), "frontend": self.frontend(launch)}
