"""A dry run's simulated engine schedules with the budgets the stack's engine resolves on the
stack's GPU, as the candidate list simulated it."""

from __future__ import annotations

import pytest

from apps.benchmarks.engine_spec import simulated_engine
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
