"""Workload classes, the sweep's trials and the best trial (stackselect_domain/tuning.py)."""

from __future__ import annotations

import pytest
from stackselect_domain.tuning import (
    MAX_SWEEP,
    backend_knobs,
    best_trial,
    check_sweep_values,
    engine_backend,
    engine_knobs,
    engine_label,
    sweep_trials,
    workload_class,
)


def test_long_prompts_come_before_concurrency_and_short_chat_is_the_rest():
    assert workload_class(mean_isl=8000, in_flight=128) == "long_prompts"
    assert workload_class(mean_isl=512, in_flight=128) == "high_concurrency"
    assert workload_class(mean_isl=512, in_flight=None) == "short_chat"


def test_a_sweep_tries_defaults_the_documented_setting_and_the_grid_once_each():
    documented = [{"settings": {"max_num_batched_tokens": 2048}, "source": "docs"}]
    trials = sweep_trials(recommended=documented, sweep={"max_num_batched_tokens": (2048, 8192)})
    assert [(t.origin, t.settings) for t in trials] == [
        ("defaults", {}),
        ("recommended", {"max_num_batched_tokens": 2048}),
        ("sweep", {"max_num_batched_tokens": 8192}),
    ]


def test_a_documented_flag_without_an_engine_neutral_word_is_not_a_trial():
    trials = sweep_trials(recommended=[{"settings": {}, "source": "docs"}], sweep=None)
    assert [t.origin for t in trials] == ["defaults"]


def test_a_grid_too_large_or_with_unknown_words_is_refused():
    with pytest.raises(ValueError, match="at most"):
        check_sweep_values({"max_num_seqs": list(range(1, MAX_SWEEP + 2))})
    with pytest.raises(ValueError, match="unknown setting"):
        check_sweep_values({"cuda_graph_sizes": [8]})
    with pytest.raises(ValueError, match=r"tuning\.max_num_seqs"):
        check_sweep_values({"max_num_seqs": [0]})


def test_the_highest_rate_under_the_slo_wins_and_goodput_breaks_ties():
    assert best_trial([(2.0, 1.0), (4.0, 0.5), (None, 9.0)]) == 1
    assert best_trial([(4.0, 1.0), (4.0, 3.0)]) == 1
    assert best_trial([(None, 1.0), (None, 2.0)]) is None


def test_settings_read_in_an_engines_own_knobs_leave_out_what_it_has_no_knob_for():
    settings = {"max_num_seqs": 4, "cuda_graph_max_batch": 64}
    assert engine_knobs("tensorrt-llm", settings) == {
        "--max_batch_size": 4,
        "cuda_graph_config.max_batch_size": 64,
    }
    assert engine_knobs("llama-cpp", settings) == {"--parallel": 4}
    assert engine_knobs("simulated", settings) == {}


def test_lmdeploy_runs_on_pytorch_only_for_what_turbomind_cannot_run():
    def backend(precision, kv_dtype=None, speculative=False):
        return engine_backend(
            "lmdeploy", precision=precision, kv_dtype=kv_dtype, speculative=speculative
        )

    assert backend("bf16") == backend("int4_awq", "int8") == "turbomind"
    assert backend("fp8") == backend("mxfp4") == "pytorch"
    assert backend("bf16", "fp8") == backend("bf16", "fp8_e5m2") == "pytorch"
    assert backend("bf16", speculative=True) == "pytorch"
    assert engine_backend("vllm", precision="fp8", kv_dtype="fp8", speculative=True) is None


def test_turbomind_lacks_the_capture_knob_that_lmdeploys_pytorch_engine_reads():
    assert "cuda_graph_max_batch" not in backend_knobs("lmdeploy", "turbomind")
    assert backend_knobs("lmdeploy", "pytorch")["cuda_graph_max_batch"] == (
        "--cudagraph-capture-batch-sizes"
    )
    assert "cuda_graph_max_batch" in backend_knobs("vllm", None)
    assert backend_knobs("simulated", None) is None
    assert engine_label("lmdeploy", "turbomind") == "lmdeploy (TurboMind)"
    assert engine_label("vllm", None) == "vllm"
