"""Catalog figures the estimator computes with are refused at the API when zero, negative or
(for a memory fraction) above 1: a 400 naming the field, and the row left as it was.

A stored memory fraction of -7e145 (written by a fuzzed PATCH) made every later candidate
computation stop on an internal error, for every team, since each evaluates every release.
"""

from __future__ import annotations

import pytest

from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from tests.catalog.refusals import assert_patch_refused, patch_detail

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fraction", [-7.35e145, 0, 1.5])
def test_a_release_memory_fraction_outside_zero_to_one_is_a_400_and_nothing_changes(
    catalog, curator, fraction
):
    release = EngineRelease.objects.filter(memory_fraction__isnull=False).first()

    assert_patch_refused(curator, release, "release", release.pk, "memory_fraction", fraction)

    assert 0 < release.memory_fraction <= 1


def test_a_release_memory_fraction_of_one_is_accepted(catalog, curator):
    release = EngineRelease.objects.filter(memory_fraction__isnull=False).first()

    response = patch_detail(curator, "release", release.pk, {"memory_fraction": 1})

    assert response.status_code == 200, response.json()
    assert EngineRelease.objects.get(pk=release.pk).memory_fraction == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("bandwidth_tbps", -2.4e225), ("memory_gb", 0), ("interconnect_gbps", -1)],
)
def test_an_accelerator_figure_of_zero_or_less_is_a_400_and_nothing_changes(
    catalog, curator, field, value
):
    accelerator = Accelerator.objects.get(slug="h100-sxm")

    assert_patch_refused(curator, accelerator, "accelerator", accelerator.slug, field, value)


def test_an_unsourced_accelerator_figure_may_still_be_cleared(catalog, curator):
    response = patch_detail(curator, "accelerator", "h100-sxm", {"fp4_tflops": None})

    assert response.status_code == 200, response.json()
    assert Accelerator.objects.get(slug="h100-sxm").fp4_tflops is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("layers", 0), ("attention_heads", 0), ("params_total_b", -1e-05), ("params_active_b", 0)],
)
def test_a_model_figure_of_zero_or_less_is_a_400_and_nothing_changes(
    catalog, curator, field, value
):
    model = ModelSpec.objects.get(slug="llama-3.1-8b")

    assert_patch_refused(curator, model, "model", model.slug, field, value)
