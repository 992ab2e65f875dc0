"""A dry run's simulated engine schedules with the budgets the stack's engine resolves on the
stack's GPU, as the candidate list simulated it."""

from __future__ import annotations

import pytest

from apps.benchmarks.engine_spec import real_engine, simulated_engine
from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections.catalog_adapter import model_arch
from tests.selections.catalog_fixture import load_catalog

STACK = {"precision": "bf16", "tp": 1, "pp": 1, "ep": 1, "dp": 1}


def _options(accelerator: str) -> dict:
    return simulated_engine(
        stack=STACK,
        arch=model_arch(ModelSpec.objects.get(slug="llama-3.1-8b")),
        accelerator=Accelerator.objects.get(slug=accelerator),
        release=EngineRelease.objects.get(engine__slug="vllm"),
        served_model_name="llama",
        kv_dtype=None,
        mean_context=1024.0,
    )["options"]


@pytest.mark.django_db
def test_the_simulated_engine_gets_vllms_budgets_for_the_gpu_the_stack_names() -> None:
    load_catalog()
    small, large = _options("l40s"), _options("h100-sxm")

    assert (small["max_num_batched_tokens"], small["max_num_seqs"]) == (2048, 256)
    assert (large["max_num_batched_tokens"], large["max_num_seqs"]) == (8192, 1024)


def _real_options(**stack) -> dict:
    stack = {"engine": "vllm", "precision": "fp8", **stack}
    return real_engine(stack=stack, served_model_name="m", model_key="m", kv_dtype=None)["options"]


def test_a_real_engine_gets_the_layout_the_estimate_read_with_missing_or_empty_degrees_as_one():
    options = _real_options(tp=4, pp=None, dp=2)

    assert {key: options[key] for key in ("tp", "pp", "ep", "dp")} == {
        "tp": 4,
        "pp": 1,
        "ep": 1,
        "dp": 2,
    }


def test_a_real_engine_is_refused_a_layout_the_estimate_would_refuse():
    with pytest.raises(ValueError, match="dp"):
        _real_options(tp=1, dp=0)
