"""Each engine adapter sets a tuning word through the knob that stackselect_domain.tuning's
ENGINE_KNOBS names for it (the adapters read their knob names from that table), so a trial
recorded in the engine's own words is what the engine was really given; each knob is a flag (or
LLM API field) of the engine's pinned release; an engine, or a backend, without a knob refuses
the word by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from stackselect_domain.tuning import ENGINE_KNOBS, TUNABLE, engine_backend
from stackselect_runner.engines import UnsupportedSetting, get_engine_adapter
from stackselect_runner.engines.base import ENGINE_CPUS_ENV
from stackselect_runner.engines.stack import StackSettings
from stackselect_runner.engines.tensorrt_llm import extra_llm_api_options

from .test_engine_adapters_commands import launch
from .test_engine_adapters_flags import flag_set

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GGUF = "/models/llama-3.1-8b-q4_k_m.gguf"
# A value no adapter picks by itself, and above TGI's default capture list (32).
VALUE = 96
# Values below and above that default list: a trial's own limit is passed either way.
VALUES = (16, VALUE)
# The format each engine needs for a knob beyond plain bf16 weights (LMDeploy's PyTorch
# engine, which reads the capture list, runs fp8 checkpoints; llama.cpp serves GGUF).
OPTIONS = {"lmdeploy": {"precision": "fp8"}, "llama-cpp": {"model_path": GGUF,
                                                         "frontend": "llama-server"}}  # fmt: skip
PAIRS = [(engine, word) for engine, knobs in ENGINE_KNOBS.items() for word in knobs]


@pytest.fixture(autouse=True)
def unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENGINE_CPUS_ENV, raising=False)


def _values_after(argv: list[str], flag: str) -> list[str]:
    start = argv.index(flag) + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("-")), len(argv))
    return argv[start:end]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize(("engine", "word"), PAIRS)
def test_the_adapter_sets_each_tuning_word_through_the_knob_the_table_names(
    engine, word, value, tmp_path
):
    spec = launch(tmp_path, MODEL, **OPTIONS.get(engine, {}), **{word: value})
    knob = ENGINE_KNOBS[engine][word]
    if knob.startswith("cuda_graph_config."):
        options = extra_llm_api_options(StackSettings.from_options(spec.options))
        assert options["cuda_graph_config"][knob.split(".", 1)[1]] == value
        return
    values = _values_after(get_engine_adapter(engine).build_command(spec), knob)
    # A capture list (LMDeploy, TGI) ends at the limit; every other knob takes the value.
    assert values[-1].split(",")[-1] == str(value)


@pytest.mark.parametrize(
    ("engine", "options"),
    [
        ("llama-cpp", {"model_path": GGUF, "frontend": "llama-server"}),
        ("lmdeploy", {"precision": "bf16"}),  # TurboMind: no capture flag
    ],
)
def test_an_engine_without_a_capture_knob_refuses_the_capture_limit_by_name(
    engine, options, tmp_path
):
    spec = launch(tmp_path, MODEL, **options, cuda_graph_max_batch=VALUE)
    with pytest.raises(UnsupportedSetting, match="cuda_graph_max_batch"):
        get_engine_adapter(engine).build_command(spec)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi"])
def test_every_knob_the_table_names_is_defined_by_the_engines_pinned_release(engine):
    doc = flag_set(engine)
    for word, knob in ENGINE_KNOBS[engine].items():
        if "." in knob:  # a field of TensorRT-LLM's LLM API options file
            section, field = knob.split(".")
            assert field in doc["llm_api_options"][section], (engine, word, knob)
        else:
            assert knob in doc["flags"], (engine, word, knob)


@pytest.mark.parametrize(
    ("options", "backend"),
    [
        ({"precision": "bf16"}, "turbomind"),
        ({"precision": "bf16", "kv_dtype": "int8"}, "turbomind"),
        ({"precision": "fp8"}, "pytorch"),
        ({"precision": "bf16", "kv_dtype": "fp8_e5m2"}, "pytorch"),
        ({"precision": "bf16", "speculative": {"method": "eagle3", "draft_model": "d",
                                               "num_tokens": 3},
          "draft_model_path": "/models/d"}, "pytorch"),
    ],
)  # fmt: skip
def test_lmdeploy_serves_on_the_backend_the_domains_rule_names(options, backend, tmp_path):
    """The planner refuses a TurboMind capture limit by the same rule (engine_backend)."""
    argv = get_engine_adapter("lmdeploy").build_command(launch(tmp_path, MODEL, **options))
    chosen = engine_backend(
        "lmdeploy",
        precision=options["precision"],
        kv_dtype=options.get("kv_dtype"),
        speculative="speculative" in options,
    )
    assert argv[argv.index("--backend") + 1] == backend == chosen


def test_the_table_covers_every_tuning_word_for_the_engines_with_cuda_graphs():
    for engine in ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi"):
        assert set(ENGINE_KNOBS[engine]) == set(TUNABLE), engine
    assert "cuda_graph_max_batch" not in ENGINE_KNOBS["llama-cpp"]


def test_without_its_own_limit_the_capture_size_follows_the_batch_limit(tmp_path):
    spec = launch(tmp_path, MODEL, max_num_seqs=200)
    argv = get_engine_adapter("sglang").build_command(spec)
    assert _values_after(argv, "--cuda-graph-max-bs-decode") == ["200"]
    assert "--max-cudagraph-capture-size" not in get_engine_adapter("vllm").build_command(spec)


def test_a_capture_limit_on_the_simulator_is_accepted_and_not_passed_on(tmp_path):
    spec = launch(Path(tmp_path), "sim", max_num_seqs=8, cuda_graph_max_batch=VALUE)
    argv = get_engine_adapter("simulated").build_command(spec)
    assert "--max-num-seqs" in argv and str(VALUE) not in argv
