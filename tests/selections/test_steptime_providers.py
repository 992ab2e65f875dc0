"""Step times by engine: one selection function, profiles per engine, the method named."""

import pytest
from stackselect_domain.steptime import (
    METHOD_AICONFIGURATOR,
    METHOD_ROOFLINE,
    METHOD_TEAM_FITTED,
    RooflineStepTime,
    StepBatch,
)
from stackselect_domain.workload import FixedLength, OpenLoopArrivals, Workload

from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.engine_profiles import DEFAULT_PROFILE, PROFILES, engine_profile
from apps.selections.estimator import (
    AcceleratorSpec,
    Efficiency,
    ModelArch,
    Parallelism,
    estimate_latency,
)
from apps.selections.simulator import EngineConfig
from apps.selections.steady_state import steady_run
from apps.selections.steptime_providers import (
    CUSTOM_MODEL_REASON,
    TEAM_FACTORS_NOTE,
    StackInputs,
    method_note,
    method_record,
    step_time_factory,
    step_time_provider,
)

LLAMA_8B = ModelArch(8.03, 8.03, 32, 4096, 32, 8, 128)
MI300X = AcceleratorSpec("mi300x", 192, 5.3, 1307.4, 2614.9, None, 448)
DECODE_8 = StepBatch(prefill_tokens=0, decode_seqs=8, kv_tokens_read=8 * 1200, attn_token_ctx=9600)
MIXED = StepBatch(prefill_tokens=512, decode_seqs=8, kv_tokens_read=10_000, attn_token_ctx=140_000)


def _stack(engine: str) -> StackInputs:
    return StackInputs(LLAMA_8B, MI300X, "bf16", "bf16", Parallelism(), engine, "1.0")


def _provider(engine: str):
    return step_time_provider(_stack(engine), decode_batch=8, context=1152)


def test_every_profile_names_where_its_factors_come_from_and_says_what_is_judgement():
    for profile in (*PROFILES.values(), DEFAULT_PROFILE):
        assert profile.basis
        assert profile.graph_saving_ms >= 0
    assert all("judgement" in p.basis for p in PROFILES.values())
    assert engine_profile("no-such-engine") is DEFAULT_PROFILE


def test_two_engines_on_one_layout_get_different_step_times_with_the_method_named():
    vllm, tgi = _provider("vllm"), _provider("tgi")

    assert vllm.method == tgi.method == METHOD_ROOFLINE
    assert (vllm.engine, tgi.engine) == ("vllm", "tgi")
    assert vllm.step_seconds(DECODE_8) != tgi.step_seconds(DECODE_8)
    assert method_record(vllm, "simulated")["label"] == "roofline, simulated"


def test_cuda_graphs_shorten_decode_only_steps_within_their_batch_limit():
    llama = _provider("llama-cpp")  # graphs for single-token decode only
    single = StepBatch(prefill_tokens=0, decode_seqs=1, kv_tokens_read=1200, attn_token_ctx=1200)
    eager = RooflineStepTime(llama.cost)

    assert llama.step_seconds(single) < eager.step_seconds(single)
    assert llama.step_seconds(DECODE_8) == eager.step_seconds(DECODE_8)
    assert llama.step_seconds(MIXED) == eager.step_seconds(MIXED)


def test_the_analytic_estimate_runs_on_the_engine_provider():
    shared = {
        "model": LLAMA_8B,
        "accel": MI300X,
        "precision": "bf16",
        "kv_dtype": "bf16",
        "parallelism": Parallelism(),
        "isl": 1024,
        "osl": 256,
        "concurrency": 1,
    }

    vllm = estimate_latency(**shared, step_time=step_time_factory(_stack("vllm")))
    tgi = estimate_latency(**shared, step_time=step_time_factory(_stack("tgi")))

    assert vllm.tpot_ms < tgi.tpot_ms  # TGI's higher host overhead, graphs on both at batch 1


def test_the_simulator_runs_on_the_engine_provider_and_engines_differ():
    workload = Workload(FixedLength(1024), FixedLength(128), OpenLoopArrivals("poisson", 1.0))
    config = EngineConfig(8192, 256, 1_000_000)

    runs = {
        engine: steady_run(
            workload,
            n=1000,
            seed=3,
            step_time=_provider(engine),
            config=config,
            slo=None,
            concurrency=16,
        )
        for engine in ("vllm", "lmdeploy")
    }

    assert runs["vllm"].summary.tpot_ms.mean != runs["lmdeploy"].summary.tpot_ms.mean


def _catalog_stack(engine: str, *, slug: str = "llama-3.1-70b") -> StackInputs:
    spec = ModelSpec.objects.get(slug=slug)
    return StackInputs(
        model_arch(spec),
        accelerator_spec(Accelerator.objects.get(slug="h200-sxm")),
        "fp8",
        "bf16",
        Parallelism(tp=8),
        engine,
        "",
        catalog_model=spec,
        accelerator_slug="h200-sxm",
    )


@pytest.mark.skipif(not aiconfigurator_wheel.AVAILABLE, reason="aiconfigurator-core not here")
def test_aiconfigurator_answers_where_it_covers_and_the_teams_own_factors_come_first(catalog):
    covered = _catalog_stack("sglang")

    aic = step_time_provider(covered, decode_batch=8, context=1152)
    team = step_time_provider(covered, decode_batch=8, context=1152, efficiency=Efficiency())
    uncovered = step_time_provider(_catalog_stack("tgi"), decode_batch=8, context=1152)

    assert aic.method == METHOD_AICONFIGURATOR, method_note(covered)
    assert aic.step_seconds(DECODE_8) > 0
    assert "sglang" in method_note(covered)
    assert team.method == METHOD_TEAM_FITTED
    assert method_note(covered, efficiency=Efficiency()) == TEAM_FACTORS_NOTE
    assert uncovered.method == METHOD_ROOFLINE
    assert "tgi" in method_note(_catalog_stack("tgi"))


def test_a_stack_without_its_catalog_rows_gets_the_roofline_and_the_reason():
    provider = _provider("sglang")

    assert provider.method == METHOD_ROOFLINE
    assert method_note(_stack("sglang")) == f"roofline, because {CUSTOM_MODEL_REASON}"
