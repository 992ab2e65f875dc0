"""Kernel applicability over the whole curated catalog: no kept stack runs a kernel that cannot
apply to the model, the precision or the GPU, and every drop names the fact that ruled it out."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from apps.catalog.models import ModelSpec
from apps.selections.candidates import Verdict
from apps.selections.candidates.enumeration import serving_stacks
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import goal_from_documents
from apps.selections.candidates.kernels import collapse_backends
from apps.selections.catalog_adapter import CatalogSnapshot
from tests.selections.conftest import GOAL

pytestmark = pytest.mark.django_db

# Domain facts the test checks independently of the catalog rows the filter reads.
MLA_ONLY = {"flashmla", "cutlass_mla"}
FP8_ONLY = {"deepgemm"}
FP4_TENSOR_CORE_FAMILIES = {"blackwell", "blackwell-rtx", "cdna4"}
NOT_GGUF_PATHS = {"flash_attention", "flashinfer", "flex_attention", "trtllm_kernels"}


def _goal(model: ModelSpec, precisions: list[str], max_gpus: int = 2):
    workload = copy.deepcopy(GOAL["workload"])
    workload.update(model=model.slug, precision=precisions, max_context=None)
    return goal_from_documents(
        model=model,
        workload=workload,
        slo=GOAL["slo"],
        constraints={"max_gpus": max_gpus},
    )


def _verdicts(
    model: ModelSpec, precisions: list[str], max_gpus: int = 1, accelerators=None
) -> Iterator[Verdict]:
    snapshot = CatalogSnapshot.load(accelerator_slugs=accelerators)
    judge = Judge(snapshot, _goal(model, precisions, max_gpus))
    for stack in serving_stacks(snapshot, judge.goal):
        yield judge.verdict(stack)


def _kept(model, precisions, max_gpus=1) -> list[Verdict]:
    snapshot = CatalogSnapshot.load()
    return collapse_backends(
        (v for v in _verdicts(model, precisions, max_gpus) if v.kept), snapshot
    )


def _violations(verdict: Verdict, model: ModelSpec) -> list[str]:
    stack, found = verdict.stack, []
    for backend in stack.backends:
        if backend.slug in MLA_ONLY and model.attention_kind != "mla":
            found.append(f"{backend.slug} on {model.attention_kind}")
        if backend.slug in FP8_ONLY and stack.precision != "fp8":
            found.append(f"{backend.slug} with {stack.precision}")
        if backend.slug in NOT_GGUF_PATHS and stack.precision.startswith("q"):
            found.append(f"{backend.slug} with GGUF {stack.precision}")
    if stack.precision == "fp4" and stack.accelerator.family not in FP4_TENSOR_CORE_FAMILIES:
        found.append(f"fp4 on {stack.accelerator.family}")
    return found


def test_no_kept_stack_of_any_curated_model_runs_a_kernel_that_cannot_apply(catalog):
    checked = 0
    for model in ModelSpec.objects.all():
        for verdict in _kept(model, ["bf16", "fp8", "fp4", "q4_k_m"]):
            assert _violations(verdict, model) == [], verdict.stack.label()
            checked += 1
    assert checked > 500  # the whole catalog was walked, not an empty list


def test_mla_kernels_are_dropped_for_a_gqa_model_with_the_fact_that_rules_them_out(catalog):
    model = ModelSpec.objects.get(slug="llama-3.1-8b")
    dropped = [
        v
        for v in _verdicts(model, ["bf16"], accelerators=["a100-sxm-80gb", "h100-sxm"])
        if v.stack.backend and v.stack.backend.slug in MLA_ONLY
    ]
    assert dropped and not any(v.kept for v in dropped)
    a100 = [v for v in dropped if v.stack.accelerator.slug == "a100-sxm-80gb"]
    codes = {r.code for v in a100 for r in v.reasons}
    assert {"kernel_attention_mismatch", "kernel_hardware_mismatch"} <= codes
    message = next(r.message for r in a100[0].reasons if r.code == "kernel_attention_mismatch")
    assert "mla" in message and "gqa" in message and "source:" in message


def test_an_mla_model_keeps_cutlass_mla_on_blackwell_but_not_on_hopper(catalog):
    model = ModelSpec.objects.get(slug="deepseek-v3")
    verdicts = [
        v
        for v in _verdicts(model, ["fp8"], max_gpus=8, accelerators=["h100-sxm", "b200"])
        if v.stack.backend and v.stack.backend.slug == "cutlass_mla"
    ]
    on = {v.stack.accelerator.family: v for v in verdicts if v.stack.release.engine.slug == "vllm"}
    hopper = [v for v in verdicts if v.stack.accelerator.family == "hopper"]
    assert hopper and all("kernel_hardware_mismatch" in {r.code for r in v.reasons} for v in hopper)
    blackwell = [v for v in verdicts if v.stack.accelerator.family == "blackwell"]
    assert not any(r.code.startswith("kernel_") for v in blackwell for r in v.reasons)
    assert "blackwell" in on


def test_an_mla_model_on_rtx_pro_6000_drops_the_sm100_mla_kernels_and_keeps_triton(catalog):
    model = ModelSpec.objects.get(slug="deepseek-v3")
    verdicts = list(_verdicts(model, ["fp4"], max_gpus=8, accelerators=["rtx-pro-6000-server"]))
    by_backend: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        if verdict.stack.backend is not None:
            by_backend.setdefault(verdict.stack.backend.slug, []).append(verdict)

    # SM120 is neither Hopper nor SM100, the only targets of FlashMLA and CUTLASS MLA
    for slug in ("flashmla", "cutlass_mla"):
        mla = by_backend[slug]
        assert mla and not any(v.kept for v in mla)
        assert all("kernel_hardware_mismatch" in {r.code for r in v.reasons} for v in mla)
    message = next(
        r.message for r in by_backend["flashmla"][0].reasons if r.code == "kernel_hardware_mismatch"
    )
    assert "blackwell-rtx" in message and "source:" in message
    triton = by_backend["triton"]
    assert triton and not any(r.code.startswith("kernel_") for v in triton for r in v.reasons)
    assert any(v.kept for v in triton)


def test_tensorrt_llm_keeps_fp4_on_rtx_pro_6000_while_sglang_drops_its_trtllm_kernels(catalog):
    model = ModelSpec.objects.get(slug="qwen3-30b-a3b")
    verdicts = list(_verdicts(model, ["fp4"], accelerators=["rtx-pro-6000-server"]))
    trt = [v for v in verdicts if v.stack.release.engine.slug == "tensorrt-llm"]
    sglang_trt = [
        v
        for v in verdicts
        if v.stack.release.engine.slug == "sglang"
        and v.stack.backend
        and v.stack.backend.slug == "trtllm_kernels"
    ]

    # NVIDIA's overview measured exactly this: Qwen3-30B-A3B in FP4 on one RTX PRO 6000
    assert any(v.kept for v in trt)
    assert sglang_trt and not any(v.kept for v in sglang_trt)
    assert all("hardware_unsupported" in {r.code for r in v.reasons} for v in sglang_trt)


def test_deepgemm_is_dropped_for_bf16_and_kept_only_for_fp8(catalog):
    model = ModelSpec.objects.get(slug="qwen3-32b")
    deepgemm = [
        v
        for v in _verdicts(model, ["bf16", "fp8"], accelerators=["h100-sxm"])
        if v.stack.backend and v.stack.backend.slug == "deepgemm"
    ]
    bf16 = [v for v in deepgemm if v.stack.precision == "bf16"]
    assert bf16 and all("kernel_precision_mismatch" in {r.code for r in v.reasons} for v in bf16)
    assert all(v.stack.precision == "fp8" for v in deepgemm if v.kept)


def test_fp4_is_dropped_on_hopper_for_every_engine_and_tensorrt_llm_keeps_it_on_blackwell(catalog):
    model = ModelSpec.objects.get(slug="llama-3.1-70b")
    verdicts = list(_verdicts(model, ["fp4"], accelerators=["h100-sxm", "b200"]))
    h100 = [v for v in verdicts if v.stack.accelerator.slug == "h100-sxm"]
    assert h100 and not any(v.kept for v in h100)
    assert all("hardware_precision_unsupported" in {r.code for r in v.reasons} for v in h100)
    trt_b200 = [
        v
        for v in verdicts
        if v.stack.release.engine.slug == "tensorrt-llm" and v.stack.accelerator.slug == "b200"
    ]
    assert any(v.kept for v in trt_b200)


def test_tgi_runs_gguf_on_its_llama_cpp_backend_not_on_flash_attention(catalog):
    model = ModelSpec.objects.get(slug="llama-3.1-8b")
    tgi = [
        v
        for v in _verdicts(model, ["q4_k_m"], accelerators=["h100-sxm"])
        if v.stack.release.engine.slug == "tgi" and v.stack.accelerator.slug == "h100-sxm"
    ]
    by_backend = {v.stack.backend.slug: v for v in tgi}
    assert "kernel_precision_mismatch" in {r.code for r in by_backend["flash_attention"].reasons}
    assert "kernel_precision_mismatch" in {r.code for r in by_backend["flashinfer"].reasons}
    assert not any(r.code.startswith("kernel_") for r in by_backend["ggml_cuda"].reasons)


def test_backends_the_catalog_cannot_tell_apart_collapse_into_one_candidate(catalog):
    model = ModelSpec.objects.get(slug="llama-3.1-8b")
    kept = _kept(model, ["bf16"])
    vllm_h100 = [
        v
        for v in kept
        if v.stack.release.engine.slug == "vllm" and v.stack.accelerator.slug == "h100-sxm"
    ]
    assert len(vllm_h100) == 1
    listed = {backend.slug for backend in vllm_h100[0].stack.backends}
    assert {"flash_attention", "flashinfer", "triton"} <= listed
    assert not listed & MLA_ONLY
    assert vllm_h100[0].stack.as_dict()["backends"] == [b.slug for b in vllm_h100[0].stack.backends]


def test_backends_stay_apart_when_they_differ_in_a_feature_the_goal_reads(catalog):
    model = ModelSpec.objects.get(slug="llama-3.1-8b")
    snapshot = CatalogSnapshot.load(accelerator_slugs=["h100-sxm"])

    def tgi():
        verdicts = _verdicts(model, ["bf16"], accelerators=["h100-sxm"])
        return [v for v in verdicts if v.kept and v.stack.release.engine.slug == "tgi"]

    plain = collapse_backends(tgi(), snapshot)
    prefix_heavy = collapse_backends(tgi(), snapshot, relevant=["prefix_caching"])

    assert [{b.slug for b in v.stack.backends} for v in plain] == [
        {"flash_attention", "flashinfer", "ggml_cuda"}
    ]
    assert {tuple(b.slug for b in v.stack.backends) for v in prefix_heavy} == {
        ("flash_attention", "ggml_cuda"),
        ("flashinfer",),
    }
