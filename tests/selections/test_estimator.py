"""Estimator: hand-calculated KV and weight sizes, memory fit, and latency bounds."""

import itertools
from dataclasses import replace

import pytest
from stackselect_domain.precision import weight_precision

from apps.selections.estimator import (
    AcceleratorSpec,
    Efficiency,
    ModelArch,
    Parallelism,
    StepCost,
    build_step_cost,
    estimate_latency,
    estimate_memory,
    experts_touched_fraction,
    kv_bytes_for_context,
    kv_bytes_per_token,
    max_concurrency_at_tpot,
    weights_bytes_per_gpu,
)

# Shapes from shared/data/reference-facts/models.tsv (HF config.json copies).
LLAMA_8B = ModelArch(
    params_total_b=8.03,
    params_active_b=8.03,
    layers=32,
    hidden_size=4096,
    attention_heads=32,
    kv_heads=8,
    head_dim=128,
    attention_kind="gqa",
    max_context=131072,
    vocab_size=128256,
)
LLAMA_70B = replace(
    LLAMA_8B,
    params_total_b=70.55,
    params_active_b=70.55,
    layers=80,
    hidden_size=8192,
    attention_heads=64,
)
DEEPSEEK_V3 = ModelArch(
    params_total_b=671.0,
    params_active_b=37.0,
    layers=61,
    hidden_size=7168,
    attention_heads=128,
    kv_heads=128,
    head_dim=128,
    attention_kind="mla",
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    experts_total=256,
    experts_active=8,
    max_context=163840,
)
# A gpt-oss-20b-like shape: alternating 128-token sliding-window and full layers.
SLIDING = ModelArch(
    params_total_b=21.0,
    params_active_b=21.0,
    layers=24,
    hidden_size=2880,
    attention_heads=64,
    kv_heads=8,
    head_dim=64,
    attention_kind="sliding",
    sliding_window=128,
    sliding_window_layers=12,
)
# From shared/data/reference-facts/hardware.tsv (dense TFLOPS, GB/s per direction).
H100 = AcceleratorSpec("H100 SXM", 80, 3.35, 989, 1979, None, 450)
H200 = AcceleratorSpec("H200 SXM", 141, 4.8, 989, 1979, None, 450)
NO_FP8 = AcceleratorSpec("A100-like", 80, 2.0, 312, None, None, 300)


def test_llama_3_1_8b_bf16_kv_cache_is_131072_bytes_per_token():
    # 2 (K and V) * 32 layers * 8 KV heads * 128 head dim * 2 bytes
    assert kv_bytes_per_token(model=LLAMA_8B, kv_dtype="bf16") == 2 * 32 * 8 * 128 * 2 == 131_072


def test_a_left_out_kv_dtype_is_16_bit_and_fp8_halves_it():
    assert kv_bytes_per_token(model=LLAMA_8B, kv_dtype=None) == 131_072
    assert kv_bytes_per_token(model=LLAMA_8B, kv_dtype="fp8") == 65_536


def test_deepseek_v3_mla_kv_cache_is_70272_bytes_per_token():
    # 61 layers * (512 latent + 64 RoPE key) * 2 bytes
    assert kv_bytes_per_token(model=DEEPSEEK_V3, kv_dtype="bf16") == 61 * (512 + 64) * 2 == 70_272


def test_sliding_layers_stop_growing_at_the_window():
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads, head dim 64, 2 bytes
    expected = per_layer * (12 * 1000 + 12 * 128)  # 12 full layers, 12 capped at 128 tokens
    assert kv_bytes_for_context(model=SLIDING, context=1000) == expected == 27_721_728
    short = kv_bytes_for_context(model=SLIDING, context=100)
    assert short == kv_bytes_per_token(model=SLIDING) * 100


def test_deepseek_v3_expert_split_follows_from_total_and_active_parameters():
    expert = (671 - 37) / (256 - 8)  # billions per routed expert, all MoE layers
    assert DEEPSEEK_V3.expert_params_b == pytest.approx(expert)
    assert DEEPSEEK_V3.dense_params_b == pytest.approx(671 - 256 * expert)


def test_deepseek_v3_fp8_weights_split_evenly_over_tp8_ep8():
    weights = weights_bytes_per_gpu(
        model=DEEPSEEK_V3, precision="fp8", parallelism=Parallelism(tp=8, ep=8)
    )
    assert weights == pytest.approx(671e9 * 1 / 8)


def test_dense_weights_divide_over_tensor_and_pipeline_ranks():
    weights = weights_bytes_per_gpu(
        model=LLAMA_70B, precision="bf16", parallelism=Parallelism(tp=2, pp=2)
    )
    assert weights == pytest.approx(70.55e9 * 2 / 4)


def test_kv_heads_are_replicated_once_tp_exceeds_them():
    memory = estimate_memory(
        model=LLAMA_70B,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(tp=16),
        isl=1000,
        osl=100,
    )
    # 16 ranks share 8 KV heads: each rank holds one head, i.e. an eighth of the token.
    assert memory.kv_bytes_per_token_per_gpu == pytest.approx(2 * 80 * 8 * 128 * 2 / 8)


def test_mla_latent_is_replicated_on_every_tensor_parallel_rank():
    memory = estimate_memory(
        model=DEEPSEEK_V3,
        accel=H200,
        precision="fp8",
        parallelism=Parallelism(tp=8, ep=8),
        isl=1000,
        osl=100,
    )
    assert memory.kv_bytes_per_token_per_gpu == 70_272
    assert memory.fits


def test_llama_8b_kv_capacity_on_one_h100_matches_the_hand_calculation():
    memory = estimate_memory(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=1024, osl=256
    )
    usable = 80 * 0.9
    reserve = 1.5 + 0.03 * 80
    kv_bytes = (usable - 16.06 - reserve) * 1e9
    assert memory.kv_capacity_tokens == int(kv_bytes // 131_072)
    assert memory.max_concurrent_sequences == int(kv_bytes // (131_072 * 1280))
    assert memory.fits


def _llama_8b_on_h100(fraction: float, basis: str):
    return estimate_memory(
        model=LLAMA_8B,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(),
        isl=1024,
        osl=256,
        gpu_memory_utilization=fraction,
        memory_basis=basis,
    )


def test_a_free_memory_fraction_applies_to_what_weights_and_activations_leave():
    memory = _llama_8b_on_h100(0.8, "free")

    reserve = 1.5 + 0.03 * 80
    assert memory.kv_gb_per_gpu == pytest.approx((80 - 16.06 - reserve) * 0.8)


def test_a_static_fraction_holds_weights_and_kv_with_activations_outside():
    memory = _llama_8b_on_h100(0.88, "static")

    assert memory.kv_gb_per_gpu == pytest.approx(80 * 0.88 - 16.06)


def test_an_unknown_memory_basis_is_rejected_with_the_field_named():
    with pytest.raises(ValueError, match="memory_basis"):
        _llama_8b_on_h100(0.9, "most")


def test_it_says_a_model_too_big_for_the_gpu_does_not_fit():
    memory = estimate_memory(
        model=LLAMA_70B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=1000, osl=100
    )
    assert not memory.fits
    assert "weights" in memory.reason
    assert memory.kv_capacity_tokens == 0


def test_it_says_a_context_beyond_the_model_maximum_does_not_fit():
    memory = estimate_memory(
        model=LLAMA_8B,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(),
        isl=131_000,
        osl=200,
    )
    assert not memory.fits
    assert "max_context" in memory.reason


def test_quantised_weights_leave_more_room_for_kv():
    def capacity(precision):
        return estimate_memory(
            model=LLAMA_70B,
            accel=H100,
            precision=precision,
            parallelism=Parallelism(tp=2),
            isl=1000,
            osl=100,
        ).kv_capacity_tokens

    assert capacity("int4_awq") > capacity("fp8") > capacity("bf16")


def test_gguf_and_group_quant_sizes_carry_their_scales():
    assert weight_precision("Q4_K_M").bits_per_weight == 4.84
    assert weight_precision("q8_0").bits_per_weight == 8.5
    assert weight_precision("int4_awq").bits_per_weight == 4 + 20 / 128


def test_unknown_words_are_rejected_with_the_field_named():
    with pytest.raises(ValueError, match="precision"):
        weight_precision("int3")
    with pytest.raises(ValueError, match="kv_dtype"):
        kv_bytes_per_token(model=LLAMA_8B, kv_dtype="int2")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"attention_kind": "linear"}, "attention_kind"),
        ({"kv_heads": 7}, "kv_heads"),
        ({"attention_kind": "mla"}, "kv_lora_rank"),
        ({"attention_kind": "sliding"}, "sliding_window"),
        ({"params_active_b": 9.0}, "params_active_b"),
    ],
)
def test_model_shapes_that_make_no_sense_are_rejected(change, field):
    with pytest.raises(ValueError, match=field):
        replace(LLAMA_8B, **change)


def test_parallel_layouts_are_checked_against_the_model():
    with pytest.raises(ValueError, match="ep"):
        weights_bytes_per_gpu(model=LLAMA_8B, precision="bf16", parallelism=Parallelism(tp=2, ep=2))
    with pytest.raises(ValueError, match="tp"):
        weights_bytes_per_gpu(model=LLAMA_8B, precision="bf16", parallelism=Parallelism(tp=3))
    with pytest.raises(ValueError, match="ep"):
        Parallelism(tp=2, ep=4)
    odd_experts = replace(DEEPSEEK_V3, experts_total=250)
    with pytest.raises(ValueError, match="experts_total"):
        weights_bytes_per_gpu(
            model=odd_experts, precision="fp8", parallelism=Parallelism(tp=8, ep=8)
        )


def test_multi_gpu_layouts_need_an_interconnect_figure():
    no_link = AcceleratorSpec("no link", 80, 3.35, 989)
    with pytest.raises(ValueError, match="interconnect_gbps"):
        build_step_cost(
            model=LLAMA_8B,
            accel=no_link,
            precision="bf16",
            parallelism=Parallelism(tp=2),
            context=100,
        )


def test_step_time_follows_the_documented_formula():
    cost = StepCost(
        weight_bytes=1e9,
        kv_bytes_per_token=1e5,
        flops_per_token=1e10,
        attn_flops_per_token_ctx=1e3,
        hbm_bytes_per_s=1e12,
        flops_per_s=1e14,
        comm_s_per_token=1e-6,
        step_overhead_s=0.002,
    )
    # decode of 10 sequences at context 1000: memory (1e9 + 1e4 * 1e5) / 1e12 = 2 ms beats
    # compute (10 * 1e10 + 1e4 * 1e3) / 1e14 = 1.0001 ms; plus 2 ms overhead and 10 us comm.
    assert cost.step_seconds(10, 10_000, 10_000) == pytest.approx(0.002 + 0.002 + 10e-6)
    # prefill of 1000 tokens: compute (1e13 + 500500 * 1e3) / 1e14 wins over memory.
    expected = 0.002 + (1e13 + 500_500 * 1e3) / 1e14 + 1000e-6
    assert cost.step_seconds(1000, 1000, 500_500) == pytest.approx(expected)


def test_step_cost_survives_a_round_trip_through_a_dict():
    cost = build_step_cost(
        model=DEEPSEEK_V3,
        accel=H200,
        precision="fp8",
        parallelism=Parallelism(tp=8, ep=8),
        decode_batch=32,
        context=1500,
    )
    assert StepCost.from_dict(cost.as_dict()) == cost


def test_a_step_cost_dict_with_missing_or_extra_fields_is_rejected():
    data = build_step_cost(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), context=100
    ).as_dict()
    with pytest.raises(ValueError, match="missing"):
        StepCost.from_dict({k: v for k, v in data.items() if k != "weight_bytes"})
    with pytest.raises(ValueError, match="unknown"):
        StepCost.from_dict({**data, "speedup": 2.0})
    with pytest.raises(ValueError, match="flops_per_s"):
        StepCost.from_dict({**data, "flops_per_s": 0})


def test_fp8_runs_on_the_fp8_peak_and_falls_back_to_bf16_without_one():
    def flops(accel, precision):
        return build_step_cost(
            model=LLAMA_8B, accel=accel, precision=precision, parallelism=Parallelism(), context=10
        ).flops_per_s

    assert flops(H100, "fp8") == pytest.approx(2 * flops(H100, "bf16"), rel=0.01)
    assert flops(NO_FP8, "fp8") == flops(NO_FP8, "bf16")


def test_mxfp4_weights_compute_at_16_bits_even_where_an_fp4_peak_exists():
    fp4_gpu = AcceleratorSpec("B200-like", 180, 7.7, 2250, 4500, 9000, 900)

    def flops(precision):
        return build_step_cost(
            model=LLAMA_8B,
            accel=fp4_gpu,
            precision=precision,
            parallelism=Parallelism(),
            context=10,
        ).flops_per_s

    assert flops("mxfp4") == flops("bf16")
    assert flops("fp4") == pytest.approx(4 * flops("bf16"))


def test_routed_expert_flops_count_at_the_expert_share_of_the_dense_rate():
    def flops_per_token(model, share):
        return build_step_cost(
            model=model,
            accel=H200,
            precision="fp8",
            parallelism=Parallelism(tp=8, ep=8 if model.experts_total else 1),
            efficiency=Efficiency(expert_compute=share),
            context=1000,
        ).flops_per_token

    dense = DEEPSEEK_V3.dense_params_b / 8
    experts = DEEPSEEK_V3.experts_active * DEEPSEEK_V3.expert_params_b / 8
    assert flops_per_token(DEEPSEEK_V3, 1.0) == pytest.approx(2e9 * (dense + experts))
    assert flops_per_token(DEEPSEEK_V3, 0.25) == pytest.approx(2e9 * (dense + 4 * experts))
    # a dense model has no routed experts, so the share changes nothing
    assert flops_per_token(LLAMA_70B, 0.25) == flops_per_token(LLAMA_70B, 1.0)
    with pytest.raises(ValueError, match="expert_compute"):
        Efficiency(expert_compute=0)


def test_attention_data_parallel_experts_also_compute_the_other_replicas_tokens():
    def cost(parallelism, decode_batch):
        return build_step_cost(
            model=DEEPSEEK_V3,
            accel=H200,
            precision="fp8",
            parallelism=parallelism,
            efficiency=Efficiency(expert_compute=1.0),
            decode_batch=decode_batch,
            context=1000,
        )

    dep8 = cost(Parallelism(tp=1, dp=8, ep=8), decode_batch=16)
    # Under balanced routing a DEP8 GPU does per token of its own the expert work one GPU
    # holding every expert would: its 32 experts take the tokens of all eight replicas.
    dense, experts = DEEPSEEK_V3.dense_params_b, DEEPSEEK_V3.expert_params_b
    assert dep8.flops_per_token == pytest.approx(
        2e9 * (dense + DEEPSEEK_V3.experts_active * experts)
    )
    # ... and reads the experts 8 x 16 routed tokens touch, not 16
    touched = experts_touched_fraction(model=DEEPSEEK_V3, batch=8 * 16)
    expert_bytes = DEEPSEEK_V3.experts_total * experts / 8 * touched
    assert dep8.weight_bytes == pytest.approx((dense + expert_bytes) * 1e9)
    # with the attention split over TP instead, every GPU already sees the replica's tokens
    tp8 = cost(Parallelism(tp=8, ep=8), decode_batch=16)
    assert tp8.flops_per_token == pytest.approx(
        2e9 * (dense + DEEPSEEK_V3.experts_active * experts) / 8
    )


def test_moe_decode_reads_more_experts_as_the_batch_grows():
    fractions = [experts_touched_fraction(model=DEEPSEEK_V3, batch=b) for b in (1, 8, 64, 512)]
    assert fractions[0] == pytest.approx(8 / 256)
    assert fractions == sorted(fractions)
    assert fractions[-1] > 0.99
    assert experts_touched_fraction(model=LLAMA_8B, batch=1) == 1.0


GRID_CASES = [
    (LLAMA_8B, H100, Parallelism(), "bf16"),
    (LLAMA_8B, H100, Parallelism(), "q4_k_m"),
    (LLAMA_70B, H100, Parallelism(tp=4), "fp8"),
    (DEEPSEEK_V3, H200, Parallelism(tp=8, ep=8), "fp8"),
    (SLIDING, H100, Parallelism(), "mxfp4"),
]


@pytest.mark.parametrize(("model", "accel", "parallelism", "precision"), GRID_CASES)
def test_tpot_never_drops_below_the_memory_bandwidth_floor(model, accel, parallelism, precision):
    efficiencies = [Efficiency(), Efficiency(compute=1.0, bandwidth=1.0, comm=1.0, overhead_ms=0)]
    lengths = [(128, 16), (2000, 500), (8000, 1000)]
    for efficiency, (isl, osl), concurrency in itertools.product(
        efficiencies, lengths, [1, 4, 32, 256]
    ):
        estimate = estimate_latency(
            model=model,
            accel=accel,
            precision=precision,
            parallelism=parallelism,
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            efficiency=efficiency,
        )
        assert estimate.tpot_ms >= estimate.bandwidth_floor_tpot_ms > 0
        assert estimate.decode_step_ms >= estimate.bandwidth_floor_tpot_ms
        assert estimate.ttft_ms >= estimate.prefill_ms


def test_the_bandwidth_floor_of_a_dense_model_is_its_weights_over_raw_bandwidth():
    estimate = estimate_latency(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=100, osl=100
    )
    assert estimate.bandwidth_floor_tpot_ms == pytest.approx(8.03e9 * 2 / 3.35e12 * 1e3)


def test_tpot_rises_with_concurrency():
    tpots = [
        estimate_latency(
            model=LLAMA_8B,
            accel=H100,
            precision="bf16",
            parallelism=Parallelism(),
            isl=1000,
            osl=200,
            concurrency=c,
        ).tpot_ms
        for c in (1, 8, 64, 256)
    ]
    assert tpots == sorted(tpots)
    assert tpots[-1] > 2 * tpots[0]


def test_max_concurrency_is_the_last_one_meeting_the_tpot_target():
    kwargs = dict(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=1000, osl=200
    )
    best = max_concurrency_at_tpot(target_tpot_ms=25, **kwargs)
    assert best > 1
    assert estimate_latency(concurrency=best, **kwargs).tpot_ms <= 25
    assert estimate_latency(concurrency=best + 1, **kwargs).tpot_ms > 25


def test_max_concurrency_is_zero_when_one_sequence_already_misses():
    best = max_concurrency_at_tpot(
        target_tpot_ms=1,
        model=LLAMA_70B,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(tp=4),
        isl=100,
        osl=100,
    )
    assert best == 0


def test_max_concurrency_stops_at_what_the_kv_cache_holds():
    kwargs = dict(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=8000, osl=2000
    )
    memory = estimate_memory(**kwargs)
    assert max_concurrency_at_tpot(target_tpot_ms=10_000, **kwargs) == (
        memory.max_concurrent_sequences
    )


def test_tensor_parallelism_adds_communication_time():
    single = build_step_cost(
        model=LLAMA_70B, accel=H100, precision="fp8", parallelism=Parallelism(tp=1), context=10
    )
    four = build_step_cost(
        model=LLAMA_70B, accel=H100, precision="fp8", parallelism=Parallelism(tp=4), context=10
    )
    assert single.comm_s_per_token == 0
    # two ring all-reduces per layer of 8192 * 2 bytes, 2 * 3/4 of it sent, at 450 GB/s * 0.7
    expected = 2 * 80 * 8192 * 2 * 2 * 3 / 4 / (450e9 * 0.7)
    assert four.comm_s_per_token == pytest.approx(expected)
    assert four.step_overhead_s > single.step_overhead_s


def test_a_layout_deploys_in_replicas_or_in_whole_expert_groups():
    assert Parallelism(tp=2).unit_gpus == 2
    assert Parallelism(tp=2, pp=2).unit_gpus == 4
    assert Parallelism(tp=8, ep=8).unit_gpus == 8  # experts inside the replica
    assert Parallelism(tp=1, ep=8, dp=8).unit_gpus == 8  # eight replicas share the experts
    assert Parallelism(tp=2, ep=8, dp=4, pp=2).unit_gpus == 16
    assert Parallelism(tp=1, ep=4, dp=8).unit_gpus == 4  # two groups of four


def test_a_stored_stack_names_its_layout_with_missing_or_empty_degrees_as_one():
    stored = {"engine": "sglang", "tp": 2, "pp": 1, "ep": 8, "dp": 4, "precision": "fp8"}
    assert Parallelism.of_stack(stored) == Parallelism(tp=2, ep=8, dp=4)
    assert Parallelism.of_stack({"tp": 4, "dp": None}) == Parallelism(tp=4)


def test_a_stored_stack_with_a_bad_degree_is_refused_not_read_as_one():
    with pytest.raises(ValueError, match="dp: must be a positive integer"):
        Parallelism.of_stack({"tp": 1, "dp": 0})
    with pytest.raises(ValueError, match="ep: must divide tp"):
        Parallelism.of_stack({"tp": 2, "ep": 3})


def test_a_deployments_load_spreads_over_every_replicas_pipeline_micro_batches():
    assert Parallelism(tp=8).schedulers == 1
    assert Parallelism(tp=2, pp=2, dp=3).schedulers == 6
    assert Parallelism(tp=1, ep=8, dp=8).schedulers == 8


def test_prompt_tokens_from_a_prefix_cache_are_read_not_computed():
    lengths = {"model": LLAMA_8B, "accel": H100, "precision": "bf16", "parallelism": Parallelism()}
    cold = estimate_latency(**lengths, isl=4096, osl=256, concurrency=32)
    warm = estimate_latency(**lengths, isl=4096, osl=256, concurrency=32, cached_tokens=3584)
    assert warm.prefill_ms < cold.prefill_ms / 3
    assert warm.ttft_ms < cold.ttft_ms
    assert warm.tpot_ms < cold.tpot_ms
    # the decode steps read the whole context either way
    assert warm.decode_step_ms == cold.decode_step_ms
    with pytest.raises(ValueError, match="cached_tokens"):
        estimate_latency(**lengths, isl=4096, osl=256, cached_tokens=4096)
