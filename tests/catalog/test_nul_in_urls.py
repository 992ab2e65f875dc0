"""A NUL character in the slug or key of a catalog URL names no row (PostgreSQL text cannot
hold one): the API answers 400 naming that slug or key and changes nothing, a page answers
404. Before, the lookup reached the database, whose refusal became a 400 naming no field on
the API and a 500 on the model page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.models import Accelerator, Engine, Feature, KernelBackend, ModelSpec
from tests.catalog.refusals import assert_patch_refused

pytestmark = pytest.mark.django_db

ROUTES = [
    ("engine", Engine, "slug", "vllm"),
    ("backend", KernelBackend, "slug", "flash_attention"),
    ("accelerator", Accelerator, "slug", "h100-sxm"),
    ("model", ModelSpec, "slug", "llama-3.1-8b"),
    ("feature", Feature, "key", "prefix_caching"),
]


@pytest.mark.parametrize(("name", "model", "lookup", "key"), ROUTES)
def test_a_patch_to_a_catalog_key_holding_nul_is_a_400_naming_the_key_and_nothing_changes(
    catalog, curator, name, model, lookup, key
):
    row = model.objects.get(**{lookup: key})

    assert_patch_refused(curator, row, name, f"{key}\x00", lookup, f"{key}-renamed")


@pytest.mark.parametrize(("name", "model", "lookup", "key"), ROUTES)
def test_reading_a_catalog_key_holding_nul_is_a_400_naming_the_key(
    catalog, alice_client, name, model, lookup, key
):
    response = alice_client.get(reverse(f"catalog-{name}-detail", args=[f"\x00{key}"]))

    assert response.status_code == 400
    assert response.json() == {lookup: ["NUL characters are not accepted"]}


def test_the_model_page_of_a_slug_holding_nul_is_not_found(catalog, alice_client):
    response = alice_client.get(reverse("catalog:model", args=["llama-3.1-8b\x00"]))

    assert response.status_code == 404
