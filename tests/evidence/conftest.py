"""Evidence fixtures: Acme's selection with two chosen candidates (H100 and L40S), one plan."""

from __future__ import annotations

import pytest

from tests.evidence.factories import catalog, plan_for, selection_with_candidates

RATES = [{"rate_rps": 1.0}, {"rate_rps": 2.0}]


@pytest.fixture
def rows(db):
    return catalog()


@pytest.fixture
def selection(acme, alice, rows):
    return selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16"), ("l40s", 1, "bf16")]
    )


@pytest.fixture
def plan(selection):
    return plan_for(selection, load_points=RATES)


@pytest.fixture
def candidates(selection):
    return list(selection.candidates.order_by("rank"))
