"""Catalog figures the estimator computes with are refused at the API when zero, negative or
(for a memory fraction) above 1: a 400 naming the field, and the row left as it was.

A stored memory fraction of -7e145 (written by a fuzzed PATCH) made every later candidate
computation stop on an internal error, for every team, since each evaluates every release.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from tests.conftest import logged_in

pytestmark = pytest.mark.django_db


def _patch(curator, name: str, key, body: dict):
    url = reverse(f"catalog-{name}-detail", args=[key])
    return logged_in(curator).patch(url, body, content_type="application/json")


@pytest.mark.parametrize("fraction", [-7.35e145, 0, 1.5])
def test_a_release_memory_fraction_outside_zero_to_one_is_a_400_and_nothing_changes(
    catalog, curator, fraction
):
    release = EngineRelease.objects.filter(memory_fraction__isnull=False).first()
    events = AuditEvent.objects.count()

    response = _patch(curator, "release", release.pk, {"memory_fraction": fraction})

    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["memory_fraction"]
    release.refresh_from_db()
    assert 0 < release.memory_fraction <= 1
    assert AuditEvent.objects.count() == events


def test_a_release_memory_fraction_of_one_is_accepted(catalog, curator):
    release = EngineRelease.objects.filter(memory_fraction__isnull=False).first()

    response = _patch(curator, "release", release.pk, {"memory_fraction": 1})

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
    before = getattr(accelerator, field)

    response = _patch(curator, "accelerator", accelerator.slug, {field: value})

    assert response.status_code == 400, response.json()
    assert list(response.json()) == [field]
    assert getattr(Accelerator.objects.get(pk=accelerator.pk), field) == before


def test_an_unsourced_accelerator_figure_may_still_be_cleared(catalog, curator):
    response = _patch(curator, "accelerator", "h100-sxm", {"fp4_tflops": None})

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
    before = getattr(model, field)

    response = _patch(curator, "model", model.slug, {field: value})

    assert response.status_code == 400, response.json()
    assert list(response.json()) == [field]
    assert getattr(ModelSpec.objects.get(pk=model.pk), field) == before
