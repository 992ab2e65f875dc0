import pytest

from apps.catalog.matrix import build_matrix, matrix_cells
from apps.catalog.models import Capability, EngineRelease, KernelBackend
from apps.catalog.selectors import capability_index, engine_releases_with_backends
from tests.catalog.factories import make_cell, make_engine, make_feature, make_release

pytestmark = pytest.mark.django_db


def test_the_capability_index_groups_every_cell_by_release_and_feature_in_one_query(
    catalog, django_assert_num_queries
):
    with django_assert_num_queries(1):
        index = capability_index()
    assert sum(len(cells) for cells in index.values()) == Capability.objects.count()
    tgi = EngineRelease.objects.get(engine__slug="tgi")
    prefix = index[(tgi.pk, "prefix_caching")]
    assert {(c.backend_slug, c.maturity) for c in prefix} == set(
        Capability.objects.filter(release=tgi, feature__key="prefix_caching").values_list(
            "backend__slug", "maturity"
        )
    )


def test_the_capability_index_can_be_limited_to_some_releases(catalog):
    vllm = EngineRelease.objects.get(engine__slug="vllm")
    index = capability_index(release_ids=[vllm.pk])
    assert {release_id for release_id, _ in index} == {vllm.pk}


def test_releases_come_with_their_engine_and_backends_in_two_queries(
    catalog, django_assert_num_queries
):
    with django_assert_num_queries(2):
        releases = engine_releases_with_backends()
        backends = {
            release.engine.slug: {row.backend.slug for row in release.backends.all()}
            for release in releases
        }
    assert "flashinfer" in backends["vllm"]
    assert KernelBackend.objects.filter(slug__in=backends["llama-cpp"]).count() == len(
        backends["llama-cpp"]
    )


def test_a_general_cell_colours_the_matrix_pair_before_a_more_mature_narrowed_one(db):
    release = make_release(make_engine())
    feature = make_feature("prec_fp8", "kernel_precision")
    general = make_cell(release, feature, maturity="beta", note="general claim")
    narrowed = make_cell(
        release, feature, maturity="stable", vendor="nvidia", evidence_url="https://example.org/n"
    )
    (row,) = build_matrix(matrix_cells(Capability.objects.all())).rows
    (cell,) = row.cells
    assert cell.primary == general and cell.variants == [general, narrowed]
    assert cell.narrowed_count == 1
    assert "stable [nvidia]" in cell.title and "https://example.org/n" in cell.title


def test_the_most_mature_narrowed_cell_colours_a_pair_without_a_general_cell(db):
    release = make_release(make_engine())
    feature = make_feature()
    make_cell(release, feature, maturity="experimental", vendor="amd")
    best = make_cell(release, feature, maturity="stable", vendor="nvidia")
    (row,) = build_matrix(matrix_cells(Capability.objects.all())).rows
    assert row.cells[0].primary == best
