"""The catalog's JSON columns take only their documented shape: anything else is a 400 naming
the field and the row stays as it was. Stored through a fuzzed API, a number for a kernel
backend's attention kinds stopped every team's candidate computation, and a list for an
accelerator's sources made its figures page a 500."""

from __future__ import annotations

import pytest

from apps.catalog.models import Accelerator, KernelBackend
from tests.catalog.refusals import assert_patch_refused, patch_detail
from tests.conftest import logged_in

pytestmark = pytest.mark.django_db

SOURCE = {"source": "https://example.org/datasheet", "as_of": "2026-12-01", "note": "HBM3"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("attention_kinds", 21381631659530770),
        ("attention_kinds", ["mha", "warp"]),
        ("precisions", {"prec_fp8": True}),
        ("families", [["hopper"]]),
    ],
)
def test_a_kernel_backend_list_of_another_shape_is_a_400_and_nothing_changes(
    catalog, curator, field, value
):
    backend = KernelBackend.objects.get(slug="flash_attention")

    assert_patch_refused(curator, backend, "backend", backend.slug, field, value)


@pytest.mark.parametrize(
    "sources",
    [1.5, [SOURCE], {"memory_gb": "HBM3"}, {"memory_gb": {"source": 5}}, {"memory_gb": {"x": ""}}],
)
def test_accelerator_sources_of_another_shape_are_a_400_and_nothing_changes(
    catalog, curator, sources
):
    accelerator = Accelerator.objects.get(slug="h100-sxm")

    assert_patch_refused(curator, accelerator, "accelerator", accelerator.slug, "sources", sources)


def test_sourced_figures_are_accepted_and_shown_on_the_accelerator_page(catalog, curator):
    response = patch_detail(curator, "accelerator", "h100-sxm", {"sources": {"memory_gb": SOURCE}})

    assert response.status_code == 200, response.json()
    page = logged_in(curator).get("/catalog/accelerators/h100-sxm/")
    assert page.status_code == 200
    assert SOURCE["source"] in page.content.decode()
