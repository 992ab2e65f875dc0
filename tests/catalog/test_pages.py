import pytest
from django.urls import reverse

from apps.catalog.models import Capability, EngineRelease

pytestmark = pytest.mark.django_db

# Session, user and team middleware (3), the cells (1), plus slack for the session save.
MATRIX_QUERY_BUDGET = 8


def test_the_matrix_page_renders_the_whole_catalog_in_a_bounded_number_of_queries(
    catalog, alice_client, django_assert_max_num_queries
):
    with django_assert_max_num_queries(MATRIX_QUERY_BUDGET):
        response = alice_client.get(reverse("catalog:matrix"))
    matrix = response.context["matrix"]
    assert len(matrix.rows) == EngineRelease.objects.count()
    shown = sum(len(cell.variants) for row in matrix.rows for cell in row.cells if cell)
    assert shown == Capability.objects.count()


def test_filtering_the_matrix_by_amd_keeps_only_releases_that_reach_amd(catalog, alice_client):
    response = alice_client.get(reverse("catalog:matrix"), {"vendor": "amd", "contract": "kv"})
    matrix = response.context["matrix"]
    engines = {row.release.engine.slug for row in matrix.rows}
    assert "vllm" in engines and "dynamo" not in engines
    assert {feature.contract for feature in matrix.features} == {"kv"}
    cells = [cell for row in matrix.rows for c in row.cells if c for cell in c.variants]
    assert all(cell.vendor in ("", "amd") for cell in cells)


def test_a_matrix_cell_carries_its_evidence_in_the_hover_text(catalog, alice_client):
    response = alice_client.get(reverse("catalog:matrix"), {"maturity": "beta"})
    (cell,) = [c for row in response.context["matrix"].rows for c in row.cells if c]
    assert cell.primary.evidence_url in cell.title
    assert reverse("catalog:capability", args=[cell.primary.pk]) in response.content.decode()


@pytest.mark.parametrize(
    "url_name, arg",
    [
        ("catalog:engine", "sglang"),
        ("catalog:accelerator", "mi300x"),
        ("catalog:model", "llama-3.1-8b"),
        ("catalog:feature", "prefix_caching"),
        ("catalog:accelerators", None),
        ("catalog:models", None),
    ],
)
def test_detail_and_list_pages_render_for_a_signed_in_user(catalog, alice_client, url_name, arg):
    response = alice_client.get(reverse(url_name, args=[arg] if arg else []))
    assert response.status_code == 200


def test_the_accelerator_page_shows_each_figure_with_its_source(catalog, alice_client):
    response = alice_client.get(reverse("catalog:accelerator", args=["h100-sxm"]))
    figures = {figure.name: figure for figure in response.context["figures"]}
    assert figures["memory_gb"].value == 80
    assert all(figure.is_sourced for figure in figures.values())
    assert any(cell.feature.key == "hw_nvidia" for cell in response.context["cells"])


def test_comparing_two_engines_lines_up_their_newest_releases(catalog, alice_client):
    response = alice_client.get(reverse("catalog:compare"), {"engines": ["vllm", "sglang"]})
    comparison = response.context["comparison"]
    assert [r.engine.slug for r in comparison.releases] == ["sglang", "vllm"]
    rows = comparison.matrix.by_feature()
    assert rows and all(len(cells) == 2 for _, cells in rows)
    assert any(feature.key == "openai_api" for feature, _ in rows)


def test_comparing_a_single_engine_is_refused(catalog, alice_client):
    response = alice_client.get(reverse("catalog:compare"), {"engines": ["vllm"]})
    assert response.context["comparison"] is None
    assert "Pick 2 to 4 engines" in response.context["form"].errors["engines"][0]
