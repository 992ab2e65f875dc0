import pytest

from apps.catalog.matrix import build_matrix, matrix_cells
from apps.catalog.models import Capability
from tests.catalog.factories import make_cell, make_engine, make_feature, make_release

pytestmark = pytest.mark.django_db


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
