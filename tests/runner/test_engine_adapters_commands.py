"""The exact command each real engine adapter builds for representative stacks, and the refusal
of settings an engine has no flag for. Nothing is launched here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from stackselect_runner.engines import LaunchSpec, UnsupportedSetting, get_engine_adapter
from stackselect_runner.engines.base import ENGINE_CPUS_ENV, engine_cpus
from stackselect_runner.engines.tensorrt_llm import EXTRA_OPTIONS_FILE

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# Where a runner's model store keeps a draft model: the engine is given this, never a hub name.
DRAFT_PATH = "/models/drafts/EAGLE-LLaMA3.1-Instruct-8B"
MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"
DENSE_TP2_BF16 = {
    "precision": "bf16",
    "kv_dtype": "bf16",
    "tp": 2,
    "max_num_seqs": 128,
    "max_num_batched_tokens": 8192,
    "chunked_prefill": True,
    "prefix_caching": True,
}
MOE_EP8_FP8_KV = {
    "precision": "fp8",
    "kv_dtype": "fp8",
    "tp": 8,
    "ep": 8,
    "max_num_seqs": 256,
}


@pytest.fixture(autouse=True)
def unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENGINE_CPUS_ENV, raising=False)


def launch(tmp_path: Path, model: str, **options: Any) -> LaunchSpec:
    return LaunchSpec(
        model=model,
        served_model_name=model,
        port=8100,
        log_path=tmp_path / "attempt-1" / "engine.log",
        options=options,
    )


def command(slug: str, spec: LaunchSpec) -> list[str]:
    return get_engine_adapter(slug).build_command(spec)


def test_vllm_serves_a_dense_tp2_bf16_stack_with_its_recommended_memory_fraction(tmp_path):
    assert command("vllm", launch(tmp_path, LLAMA, **DENSE_TP2_BF16)) == [
        "vllm", "serve", LLAMA, "--host", "127.0.0.1", "--port", "8100",
        "--served-model-name", LLAMA, "--tensor-parallel-size", "2",
        "--pipeline-parallel-size", "1", "--data-parallel-size", "1", "--dtype", "bfloat16",
        "--max-num-seqs", "128", "--max-num-batched-tokens", "8192",
        "--enable-chunked-prefill", "--enable-prefix-caching", "--gpu-memory-utilization", "0.9",
    ]  # fmt: skip


def test_vllm_expert_parallelism_spans_tp_times_dp_with_fp8_weights_and_kv(tmp_path):
    built = command("vllm", launch(tmp_path, MIXTRAL, **MOE_EP8_FP8_KV))
    assert "--enable-expert-parallel" in built
    assert built[built.index("--quantization") + 1] == "fp8"
    assert built[built.index("--kv-cache-dtype") + 1] == "fp8"
    assert "--dtype" not in built
    with pytest.raises(UnsupportedSetting, match=r"vllm has no expert-parallel size .*ep=4"):
        command("vllm", launch(tmp_path, MIXTRAL, tp=8, ep=4))


def test_vllm_speculative_decoding_goes_into_its_json_config(tmp_path):
    spec = {"method": "eagle", "draft_model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_tokens": 3}
    built = command(
        "vllm",
        launch(
            tmp_path, LLAMA, speculative=spec, draft_model_path=DRAFT_PATH, prefix_caching=False
        ),
    )
    assert json.loads(built[built.index("--speculative-config") + 1]) == {
        "method": "eagle",
        "model": DRAFT_PATH,
        "num_speculative_tokens": 3,
    }
    assert "--no-enable-prefix-caching" in built


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmdeploy"])
def test_an_adapter_refuses_a_draft_model_without_its_local_checkpoint(engine, tmp_path):
    """Given only the plan's draft name, an engine would download it from a hub."""
    spec = {"method": "eagle", "draft_model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_tokens": 3}
    with pytest.raises(ValueError, match=r"^engine\.options\.draft_model_path: missing; "):
        command(engine, launch(tmp_path, LLAMA, precision="bf16", speculative=spec))


def test_sglang_uses_its_own_names_and_captures_cuda_graphs_up_to_the_batch_limit(tmp_path):
    assert command("sglang", launch(tmp_path, LLAMA, **DENSE_TP2_BF16)) == [
        sys.executable, "-m", "sglang.launch_server", "--model-path", LLAMA,
        "--host", "127.0.0.1", "--port", "8100", "--served-model-name", LLAMA,
        "--tp-size", "2", "--pp-size", "1", "--dp-size", "1", "--ep-size", "1",
        "--dtype", "bfloat16", "--max-running-requests", "128",
        "--chunked-prefill-size", "8192", "--cuda-graph-max-bs-decode", "128",
    ]  # fmt: skip


def test_sglang_moe_stack_sets_ep_and_fp8_kv_and_prefix_cache_off_disables_radix(tmp_path):
    built = command("sglang", launch(tmp_path, MIXTRAL, **MOE_EP8_FP8_KV, prefix_caching=False))
    assert built[built.index("--ep-size") + 1] == "8"
    assert built[built.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert built[built.index("--quantization") + 1] == "fp8"
    assert "--disable-radix-cache" in built
    off = command("sglang", launch(tmp_path, LLAMA, chunked_prefill=False))
    assert off[off.index("--chunked-prefill-size") + 1] == "-1"


def test_tensorrt_llm_puts_kv_dtype_block_reuse_and_cuda_graphs_in_its_options_file(tmp_path):
    spec = launch(tmp_path, MIXTRAL, **MOE_EP8_FP8_KV, prefix_caching=True)
    extra = tmp_path / "attempt-1" / EXTRA_OPTIONS_FILE
    assert command("tensorrt-llm", spec) == [
        "trtllm-serve", MIXTRAL, "--host", "127.0.0.1", "--port", "8100", "--backend", "pytorch",
        "--tp_size", "8", "--pp_size", "1", "--ep_size", "8", "--max_batch_size", "256",
        "--kv_cache_free_gpu_memory_fraction", "0.9", "--extra_llm_api_options", str(extra),
    ]  # fmt: skip
    assert get_engine_adapter("tensorrt-llm").effective_config(spec)["extra_llm_api_options"] == {
        "kv_cache_config": {"dtype": "fp8", "enable_block_reuse": True},
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 256},
    }


def test_tensorrt_llm_speculation_uses_the_decoding_config_names_of_the_pinned_release(tmp_path):
    draft = {"method": "draft", "draft_model": "meta-llama/Llama-3.2-1B", "num_tokens": 4}
    spec = launch(tmp_path, LLAMA, speculative=draft, draft_model_path="/models/Llama-3.2-1B")
    options = get_engine_adapter("tensorrt-llm").effective_config(spec)["extra_llm_api_options"]
    assert options["speculative_config"] == {
        "decoding_type": "Draft_Target",
        "max_draft_len": 4,
        "speculative_model": "/models/Llama-3.2-1B",
    }
    ngram = launch(tmp_path, LLAMA, speculative={"method": "ngram", "num_tokens": 3})
    config = get_engine_adapter("tensorrt-llm").effective_config(ngram)["extra_llm_api_options"]
    assert config["speculative_config"] == {"decoding_type": "NGram", "max_draft_len": 3}


def test_tensorrt_llm_refuses_data_parallel_replicas_and_e5m2_kv(tmp_path):
    with pytest.raises(UnsupportedSetting, match=r"tensorrt-llm has no data parallelism .*dp=2"):
        command("tensorrt-llm", launch(tmp_path, LLAMA, dp=2))
    with pytest.raises(UnsupportedSetting, match="fp8_e5m2"):
        command("tensorrt-llm", launch(tmp_path, LLAMA, kv_dtype="fp8_e5m2"))


def test_lmdeploy_serves_dense_tp2_on_turbomind_with_its_kv_share(tmp_path):
    assert command("lmdeploy", launch(tmp_path, LLAMA, **DENSE_TP2_BF16)) == [
        "lmdeploy", "serve", "api_server", LLAMA, "--server-name", "127.0.0.1",
        "--server-port", "8100", "--model-name", LLAMA, "--backend", "turbomind",
        "--tp", "2", "--dp", "1", "--ep", "1", "--dtype", "bfloat16",
        "--max-batch-size", "128", "--max-prefill-token-num", "8192",
        "--cache-max-entry-count", "0.8", "--enable-prefix-caching",
    ]  # fmt: skip


def test_lmdeploy_keeps_integer_kv_on_turbomind_and_has_no_pipeline_parallelism(tmp_path):
    built = command("lmdeploy", launch(tmp_path, LLAMA, precision="int4_awq", kv_dtype="int8"))
    assert built[built.index("--model-format") + 1] == "awq"
    assert built[built.index("--quant-policy") + 1] == "8"
    assert built[built.index("--backend") + 1] == "turbomind"
    with pytest.raises(UnsupportedSetting, match=r"lmdeploy has no pipeline parallelism .*pp=2"):
        command("lmdeploy", launch(tmp_path, LLAMA, pp=2))


@pytest.mark.parametrize(("kv_dtype", "policy"), [("fp8", "16"), ("fp8_e5m2", "17")])
def test_lmdeploy_serves_an_fp8_kv_cache_on_pytorch_since_turbomind_refuses_it(
    kv_dtype, policy, tmp_path
):
    built = command("lmdeploy", launch(tmp_path, LLAMA, precision="bf16", kv_dtype=kv_dtype))
    assert built[built.index("--quant-policy") + 1] == policy
    assert built[built.index("--backend") + 1] == "pytorch"
    assert built[built.index("--dtype") + 1] == "bfloat16"


def test_lmdeploy_speculates_with_eagle3_on_pytorch_with_the_draft_model(tmp_path):
    eagle3 = {"method": "eagle3", "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
              "num_tokens": 3}  # fmt: skip
    built = command(
        "lmdeploy",
        launch(tmp_path, LLAMA, precision="bf16", speculative=eagle3, draft_model_path=DRAFT_PATH),
    )
    assert built[built.index("--backend") + 1] == "pytorch"
    assert built[-6:] == [
        "--speculative-algorithm", "eagle3",
        "--speculative-draft-model", DRAFT_PATH,
        "--speculative-num-draft-tokens", "3",
    ]  # fmt: skip


def test_tgi_batches_up_to_the_stacks_limit_and_queues_every_client_above_it(tmp_path):
    settings = {**DENSE_TP2_BF16, "chunked_prefill": None, "prefix_caching": None}
    assert command("tgi", launch(tmp_path, LLAMA, **settings)) == [
        "text-generation-launcher", "--model-id", LLAMA, "--hostname", "127.0.0.1",
        "--port", "8100", "--num-shard", "2", "--dtype", "bfloat16",
        "--max-concurrent-requests", "65536", "--max-batch-size", "128",
        "--max-batch-prefill-tokens", "8192", "--cuda-graphs", "1,2,4,8,16,32,64,128",
    ]  # fmt: skip


def test_tgi_refuses_expert_parallelism_and_prefix_caching_by_name(tmp_path):
    with pytest.raises(UnsupportedSetting, match=r"^tgi has no expert parallelism flag \(ep=8\)"):
        command("tgi", launch(tmp_path, MIXTRAL, **MOE_EP8_FP8_KV))
    with pytest.raises(UnsupportedSetting, match="prefix_caching"):
        command("tgi", launch(tmp_path, LLAMA, prefix_caching=True))
    fp8_kv = command("tgi", launch(tmp_path, LLAMA, kv_dtype="fp8"))
    assert fp8_kv[fp8_kv.index("--kv-cache-dtype") + 1] == "fp8_e4m3fn"


def test_llama_server_serves_a_gguf_quant_with_parallel_slots_and_all_layers_offloaded(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(ENGINE_CPUS_ENV, "2-3")
    spec = launch(
        tmp_path, "gemma-3-270m", frontend="llama-server", model_path="/models/g.gguf",
        precision="q4_k_m", kv_dtype="q8_0", max_num_seqs=4, max_model_len=2048,
        max_num_batched_tokens=512, prefix_caching=True,
    )  # fmt: skip
    assert command("llama-cpp", spec) == [
        "llama-server", "--model", "/models/g.gguf", "--host", "127.0.0.1", "--port", "8100",
        "--alias", "gemma-3-270m", "--ctx-size", "8192", "--parallel", "4",
        "--batch-size", "512", "--cont-batching", "--n-gpu-layers", "999",
        "--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "--cache-prompt",
        "--threads", "2", "--threads-batch", "2",
    ]  # fmt: skip


def test_llama_cpp_python_never_interrupts_streams_and_serves_one_sequence(tmp_path):
    spec = launch(
        tmp_path, "gemma-3-270m", frontend="llama-cpp-python", model_path="/models/g.gguf",
        precision="q4_k_m", max_model_len=1024,
    )  # fmt: skip
    assert command("llama-cpp", spec) == [
        sys.executable, "-m", "llama_cpp.server", "--model", "/models/g.gguf",
        "--model_alias", "gemma-3-270m", "--host", "127.0.0.1", "--port", "8100",
        "--n_ctx", "1024", "--n_gpu_layers", "-1", "--interrupt_requests", "False",
    ]  # fmt: skip
    busy = launch(tmp_path, "g", frontend="llama-cpp-python", model_path="/m.gguf", max_num_seqs=8)
    with pytest.raises(UnsupportedSetting, match=r"one sequence at a time \(max_num_seqs=8\)"):
        command("llama-cpp", busy)


def test_llama_cpp_refuses_non_gguf_weights_fp8_kv_and_expert_parallelism(tmp_path):
    with pytest.raises(UnsupportedSetting, match="serves a local GGUF file"):
        command("llama-cpp", launch(tmp_path, LLAMA, frontend="llama-server"))
    gguf = {"frontend": "llama-server", "model_path": "/m.gguf"}
    with pytest.raises(UnsupportedSetting, match="no GGUF type for precision 'fp8'"):
        command("llama-cpp", launch(tmp_path, "m", **gguf, precision="fp8"))
    with pytest.raises(UnsupportedSetting, match=r"no --cache-type-k/-v flag value for 'fp8'"):
        command("llama-cpp", launch(tmp_path, "m", **gguf, kv_dtype="fp8"))
    with pytest.raises(UnsupportedSetting, match=r"llama-cpp has no expert parallelism .*ep=2"):
        command("llama-cpp", launch(tmp_path, "m", **gguf, ep=2))


def test_unknown_or_malformed_stack_settings_are_errors_naming_the_field(tmp_path):
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['colour'\]"):
        command("vllm", launch(tmp_path, LLAMA, colour="red"))
    with pytest.raises(ValueError, match=r"engine\.options\.tp must be >= 1"):
        command("sglang", launch(tmp_path, LLAMA, tp=0))
    with pytest.raises(ValueError, match=r"options\.prefix_caching must be true or false"):
        command("vllm", launch(tmp_path, LLAMA, prefix_caching="yes"))
    with pytest.raises(ValueError, match="draft_model is required for eagle"):
        command("vllm", launch(tmp_path, LLAMA, speculative={"method": "eagle", "num_tokens": 2}))


def test_the_effective_config_records_the_command_and_the_parsed_stack(tmp_path):
    spec = launch(tmp_path, LLAMA, **DENSE_TP2_BF16)
    config = get_engine_adapter("vllm").effective_config(spec)
    assert config["engine"] == "vllm"
    assert config["command"] == command("vllm", spec)
    assert config["settings"]["tp"] == 2 and config["settings"]["precision"] == "bf16"
    assert "speculative" not in config["settings"]


def test_the_engine_cpu_list_reads_single_cpus_and_ranges_and_names_the_variable_when_bad():
    assert engine_cpus({ENGINE_CPUS_ENV: "0, 2-4"}) == {0, 2, 3, 4}
    assert engine_cpus({}) is None
    with pytest.raises(ValueError, match=ENGINE_CPUS_ENV):
        engine_cpus({ENGINE_CPUS_ENV: "two"})
