"""Every flag an engine adapter emits exists in its engine's own flag definitions, with the
arity and choices they declare, for every stack the adapter accepts.

llama.cpp is held to the real parsers of the llama-cpp-python server installed here and of the
llama-server binary `make` builds from the llama.cpp source that the same pinned, hash-checked
llama-cpp-python sdist vendors (Makefile, $(LLAMA_SERVER)). vLLM, SGLang, TGI, TensorRT-LLM and
LMDeploy are held to the flag sets in engine_flags/*.json, each derived from the engine's source
at a pinned version that the file names (repository, file, tag or commit, as-of date); vLLM,
SGLang and LMDeploy from the argparse parsers of their released wheels (package, wheel, sha256).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from stackselect_domain.engine_versions import BUILD_SERIES, version_series
from stackselect_runner.engines import LaunchSpec, UnsupportedSetting, get_engine_adapter
from stackselect_runner.engines.base import ENGINE_CPUS_ENV
from stackselect_runner.probe import parse_llama_server_version

from .test_engine_adapters_commands import launch as launch_for

FLAG_SETS = Path(__file__).parent / "engine_flags"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE = {"method": "eagle", "draft_model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_tokens": 3}
# The draft's checkpoint in the runner's model store, which the engine is given.
DRAFT_PATH = "/models/drafts/draft"
# Representative stacks in the adapters' words; an adapter may refuse some (UnsupportedSetting).
STACKS: dict[str, dict[str, Any]] = {
    "dense tp2 bf16": {"precision": "bf16", "tp": 2, "max_num_seqs": 128,
                       "max_num_batched_tokens": 8192, "max_model_len": 8192},
    "moe ep8 fp8 weights and kv": {"precision": "fp8", "kv_dtype": "fp8", "tp": 8, "ep": 8,
                                   "max_num_seqs": 256},
    "prefix caching on, chunked prefill on": {"precision": "bf16", "prefix_caching": True,
                                              "chunked_prefill": True},
    "prefix caching off, chunked prefill off": {"precision": "fp16", "prefix_caching": False,
                                                "chunked_prefill": False},
    "pipeline parallel": {"precision": "bf16", "tp": 2, "pp": 2},
    "data parallel replicas": {"precision": "bf16", "dp": 2},
    "awq int4 with int8 kv": {"precision": "int4_awq", "kv_dtype": "int8"},
    "fp8 kv e5m2": {"precision": "bf16", "kv_dtype": "fp8_e5m2"},
    "memory fraction": {"precision": "bf16", "gpu_memory_fraction": 0.85},
    "eagle speculation": {"precision": "bf16", "speculative": EAGLE,
                          "draft_model_path": DRAFT_PATH},
    "n-gram speculation": {"precision": "bf16", "speculative": {"method": "ngram",
                                                                "num_tokens": 4}},
    "draft model speculation": {"precision": "bf16", "speculative": {
        "method": "draft", "draft_model": "meta-llama/Llama-3.2-1B-Instruct", "num_tokens": 4},
        "draft_model_path": DRAFT_PATH},
    "mtp speculation": {"precision": "bf16", "speculative": {"method": "mtp", "num_tokens": 1}},
    "cuda graph capture limit": {"precision": "bf16", "max_num_seqs": 256,
                                 "cuda_graph_max_batch": 96},
    "cuda graph capture limit, fp8 checkpoint": {"precision": "fp8",
                                                 "cuda_graph_max_batch": 48},
}  # fmt: skip


def flag_set(engine: str) -> dict[str, Any]:
    return json.loads((FLAG_SETS / f"{engine}.json").read_text())


def launch(tmp_path: Path, **options: Any) -> LaunchSpec:
    return launch_for(tmp_path, MODEL, **options)


def _program_length(argv: list[str], program: list[str]) -> int:
    """How many leading words are the program; "python" stands for any Python interpreter."""
    if program[0] == "python":
        assert Path(argv[0]).name.startswith("python"), f"{argv[0]} is not a Python interpreter"
        assert argv[1 : len(program)] == program[1:], argv
    else:
        assert argv[: len(program)] == program, argv
    return len(program)


def _values(tokens: list[str], start: int, arity: Any, flags: dict[str, Any]) -> int:
    """How many values follow the flag at `start - 1`, as its arity allows."""

    def is_value(index: int) -> bool:
        return index < len(tokens) and tokens[index] not in flags

    if arity == 0:
        return 0
    if arity == 1:
        return 1 if is_value(start) else -1
    count = 0
    while is_value(start + count):
        count += 1
    return count if (count >= 1 or arity == "?") else -1


def flag_problems(argv: list[str], flags_doc: dict[str, Any]) -> list[str]:
    """What in `argv` the engine's own flag definitions would refuse (empty: nothing)."""
    flags = flags_doc["flags"]
    index = _program_length(argv, flags_doc["program"])
    tokens = argv[index:]
    positional = flags_doc["positional"]
    problems = [f"positional {word!r} looks like a flag" for word in tokens[:positional]
                if word.startswith("-")]  # fmt: skip
    tokens = tokens[positional:]
    i = 0
    while i < len(tokens):
        flag = tokens[i]
        spec = flags.get(flag)
        if spec is None:
            problems.append(f"{flag}: not a flag of {flags_doc['engine']} {flags_doc['release']}")
            i += 1
            continue
        taken = _values(tokens, i + 1, spec["arity"], flags)
        if taken < 0:
            problems.append(f"{flag}: needs a value (arity {spec['arity']})")
            taken = 0
        choices = spec.get("choices")
        for value in tokens[i + 1 : i + 1 + taken]:
            if choices is not None and value not in choices:
                problems.append(f"{flag} {value}: not one of {choices}")
        i += 1 + taken
    return problems


def llm_api_problems(options: dict[str, Any], allowed: dict[str, Any]) -> list[str]:
    """TensorRT-LLM's YAML of LLM API arguments against the config fields it declares."""
    problems = []
    for section, values in options.items():
        known = allowed.get(section)
        if known is None:
            problems.append(f"{section}: not an LLM API option")
            continue
        fields = known["fields"] if isinstance(known, dict) else known
        problems += [f"{section}.{key}: not a field" for key in values if key not in fields]
        if isinstance(known, dict) and values.get("decoding_type") not in known["decoding_type"]:
            problems.append(f"{section}.decoding_type {values.get('decoding_type')!r} unknown")
    return problems


@pytest.fixture(autouse=True)
def unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENGINE_CPUS_ENV, raising=False)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi", "tensorrt-llm", "lmdeploy"])
def test_every_flag_an_adapter_emits_is_one_its_pinned_release_defines(engine, tmp_path):
    doc = flag_set(engine)
    assert doc["source"]["repository"].startswith("https://github.com/") and doc["as_of"]
    adapter = get_engine_adapter(engine)
    built = {}
    for name, options in STACKS.items():
        spec = launch(tmp_path, **options)
        try:
            built[name] = adapter.build_command(spec)
        except UnsupportedSetting:
            continue
        problems = flag_problems(built[name], doc)
        extra = adapter.effective_config(spec).get("extra_llm_api_options")
        if extra:
            problems += llm_api_problems(extra, doc["llm_api_options"])
        assert problems == [], f"{engine}, {name}: {built[name]}"
    assert len(built) >= 4, f"{engine} refused most representative stacks: built {list(built)}"


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize(
    ("stack", "policy"), [("moe ep8 fp8 weights and kv", "16"), ("fp8 kv e5m2", "17")]
)
def test_lmdeploys_fp8_kv_commands_pass_its_flag_set_on_the_pytorch_backend(
    stack, policy, tmp_path
):
    argv = get_engine_adapter("lmdeploy").build_command(launch(tmp_path, **STACKS[stack]))
    assert flag_problems(argv, flag_set("lmdeploy")) == []
    assert (_value(argv, "--quant-policy"), _value(argv, "--backend")) == (policy, "pytorch")


def test_lmdeploys_eagle_command_passes_its_flag_set_on_the_pytorch_backend(tmp_path):
    argv = get_engine_adapter("lmdeploy").build_command(
        launch(tmp_path, **STACKS["eagle speculation"])
    )
    assert flag_problems(argv, flag_set("lmdeploy")) == []
    assert _value(argv, "--backend") == "pytorch"
    assert _value(argv, "--speculative-algorithm") == "eagle"
    assert _value(argv, "--speculative-draft-model") == DRAFT_PATH
    assert _value(argv, "--speculative-num-draft-tokens") == "3"


@pytest.mark.parametrize(
    "stack", ["n-gram speculation", "draft model speculation", "mtp speculation"]
)
def test_lmdeploy_refuses_a_speculative_method_it_has_no_proposer_for_by_name(stack, tmp_path):
    spec = launch(tmp_path, **STACKS[stack])
    method = STACKS[stack]["speculative"]["method"]
    with pytest.raises(UnsupportedSetting, match=rf"^lmdeploy .*speculative={method}"):
        get_engine_adapter("lmdeploy").build_command(spec)


def test_the_check_refuses_an_unknown_flag_a_missing_value_and_a_wrong_choice():
    doc = flag_set("tgi")
    argv = ["text-generation-launcher", "--max-concurrent-requests", "--quantize", "fp4",
            "--num-gpus"]  # fmt: skip
    assert flag_problems(argv, doc) == [
        "--max-concurrent-requests: needs a value (arity 1)",
        f"--quantize fp4: not one of {doc['flags']['--quantize']['choices']}",
        "--num-gpus: not a flag of tgi 3.3.7",
    ]
    # The speculative names of older TensorRT-LLM releases are not fields of the pinned one.
    old = {"speculative_config": {"decoding_type": "Draft", "speculative_model_dir": "d"}}
    assert llm_api_problems(old, flag_set("tensorrt-llm")["llm_api_options"]) == [
        "speculative_config.speculative_model_dir: not a field",
        "speculative_config.decoding_type 'Draft' unknown",
    ]


# ---------------------------------------------------------------- llama.cpp: the real parsers

LLAMA_STACKS: dict[str, dict[str, Any]] = {
    "q4_k_m with a context": {"precision": "q4_k_m", "max_model_len": 1024},
    "q8_0 kv and a prefill batch": {"precision": "q8_0", "kv_dtype": "q8_0",
                                    "max_num_batched_tokens": 512},
    "prompt cache on": {"precision": "q4_k_m", "prefix_caching": True},
    "prompt cache off": {"precision": "q4_k_m", "prefix_caching": False},
    "prompt-lookup speculation": {"speculative": {"method": "ngram", "num_tokens": 3}},
}  # fmt: skip


def _llama_launch(tmp_path: Path, frontend: str, **options: Any) -> LaunchSpec:
    return launch(tmp_path, frontend=frontend, model_path=str(tmp_path / "g.gguf"), **options)


@pytest.mark.parametrize("stack", sorted(LLAMA_STACKS))
def test_llama_cpp_python_commands_parse_with_the_servers_own_parser(stack, tmp_path):
    cli = pytest.importorskip("llama_cpp.server.cli")
    settings = pytest.importorskip("llama_cpp.server.settings")
    spec = _llama_launch(tmp_path, "llama-cpp-python", **LLAMA_STACKS[stack])
    argv = get_engine_adapter("llama-cpp").build_command(spec)
    assert argv[:3] == [sys.executable, "-m", "llama_cpp.server"]
    # The parser `python -m llama_cpp.server` builds (llama_cpp/server/__main__.py).
    parser = argparse.ArgumentParser(exit_on_error=False)
    cli.add_args_from_model(parser, settings.Settings)
    parser.add_argument("--config_file", type=str)
    args = parser.parse_args(argv[3:])
    server = cli.parse_model_from_args(settings.ServerSettings, args)
    model = cli.parse_model_from_args(settings.ModelSettings, args)
    assert (server.host, server.port) == ("127.0.0.1", 8100)
    assert server.interrupt_requests is False  # "False" must parse to a boolean, not a string
    assert model.model == str(tmp_path / "g.gguf") and model.model_alias == MODEL
    assert model.n_gpu_layers == -1


DRAFT = {"method": "draft", "draft_model": "d.gguf", "num_tokens": 3}
# llama-server runs parallel slots and takes a draft model rather than prompt lookup.
LLAMA_SERVER_STACKS: dict[str, dict[str, Any]] = {
    **{name: {**options, "max_num_seqs": 2} for name, options in LLAMA_STACKS.items()
       if "speculative" not in options},
    "draft-model speculation": {"max_num_seqs": 2, "speculative": DRAFT,
                                "draft_model_path": "d.gguf"},
    "rows split across two GPUs": {"precision": "q4_k_m", "tp": 2},
    "layers split across two GPUs": {"precision": "q4_k_m", "pp": 2},
}  # fmt: skip


def parse_with(binary: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The binary's own parser on `args`: --help last makes it parse every flag before it (each
    handler runs, so a value is checked too), then print usage and exit 0 without loading a model.
    A flag it does not define, a removed one or a refused value exits 1 with the reason."""
    return subprocess.run(
        [str(binary), *args, "--help"], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("stack", sorted(LLAMA_SERVER_STACKS))
def test_llama_server_commands_are_accepted_by_the_pinned_binarys_parser(
    stack, llama_server, tmp_path
):
    argv = get_engine_adapter("llama-cpp").build_command(
        _llama_launch(tmp_path, "llama-server", **LLAMA_SERVER_STACKS[stack])
    )
    assert argv[0] == "llama-server"
    done = parse_with(llama_server, argv[1:])
    assert done.returncode == 0 and "error" not in done.stderr, done.stderr


def test_the_binarys_parser_refuses_an_unknown_flag_a_removed_one_and_a_wrong_value(
    llama_server,
):
    unknown = parse_with(llama_server, ["--model", "g.gguf", "--max-num-seqs", "2"])
    assert unknown.returncode == 1
    assert "error: invalid argument: --max-num-seqs" in unknown.stderr
    # The draft-size flag the adapter used before this llama.cpp release renamed it.
    removed = parse_with(llama_server, ["--model", "g.gguf", "--draft-max", "3"])
    assert removed.returncode == 1 and "the argument has been removed" in removed.stderr
    wrong = parse_with(llama_server, ["--model", "g.gguf", "--cache-type-k", "fp8"])
    assert wrong.returncode == 1 and "Unsupported cache type: fp8" in wrong.stderr


def test_the_runners_probe_reads_the_pinned_binarys_version_as_a_llama_cpp_build(llama_server):
    """A catalog llama.cpp release ("b10488") accepts every build; a version read as a release
    series instead (this build prints "0.5.0-dev (build 0, commit ...)") would leave every
    llama.cpp job waiting for a runner that has llama-server."""
    done = subprocess.run(
        [str(llama_server), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    version = parse_llama_server_version(done.stdout + done.stderr)
    assert version is not None and "commit unknown" not in version, done.stderr
    assert version_series(version) == BUILD_SERIES, version
