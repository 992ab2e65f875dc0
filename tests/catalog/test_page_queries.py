"""Every catalog list and detail page over the whole curated catalog costs the same queries for
its smallest entry as for its largest: none reads per row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from django.db.models import Count

from apps.catalog import selectors
from apps.catalog.models import Accelerator, Capability, Engine, EngineRelease, Feature, ModelSpec
from tests.catalog.factories import make_release
from tests.query_budget import page_queries, queries_before_and_after

pytestmark = pytest.mark.django_db

# Session, user and team middleware, the entry, its rows, its history, and slack for the session.
DETAIL_BUDGET = 10


def _smallest_and_largest(entries: Iterable[Any], size: Callable[[Any], int]) -> tuple[Any, Any]:
    ranked = sorted(entries, key=size)
    assert size(ranked[0]) < size(ranked[-1]), "the catalog should hold entries of different sizes"
    return ranked[0], ranked[-1]


def _same_queries_for_both(client, name: str, small: Any, large: Any, key: str = "pk") -> None:
    few = page_queries(client, name, getattr(small, key))
    many = page_queries(client, name, getattr(large, key))
    assert few == many <= DETAIL_BUDGET, (name, few, many)


def test_the_model_and_accelerator_lists_read_as_many_queries_for_a_page_as_for_one_row(
    catalog, alice_client
):
    for name, model in (("catalog:models", ModelSpec), ("catalog:accelerators", Accelerator)):
        assert model.objects.count() > 10
        one_row = page_queries(alice_client, name, query={"slug": model.objects.first().slug})
        assert one_row == page_queries(alice_client, name) <= DETAIL_BUDGET, name


def test_the_engine_and_release_pages_read_no_query_per_release_or_cell(catalog, alice_client):
    engine = Engine.objects.get(slug="vllm")
    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "catalog:engine", engine.slug),
        lambda: [make_release(engine, f"0.0.{n}") for n in range(10)],
    )
    assert engine.releases.count() > 10
    assert one == many <= DETAIL_BUDGET
    releases = EngineRelease.objects.annotate(n=Count("capabilities"))
    _same_queries_for_both(
        alice_client, "catalog:release", *_smallest_and_largest(releases, lambda r: r.n)
    )


def test_the_model_and_accelerator_pages_read_no_query_per_cell(catalog, alice_client):
    models = ModelSpec.objects.all()
    small, large = _smallest_and_largest(models, lambda m: len(selectors.model_support(m)))
    _same_queries_for_both(alice_client, "catalog:model", small, large, key="slug")
    accelerators = Accelerator.objects.all()
    small, large = _smallest_and_largest(
        accelerators, lambda a: len(selectors.accelerator_support(a))
    )
    _same_queries_for_both(alice_client, "catalog:accelerator", small, large, key="slug")


def test_the_feature_and_cell_pages_read_no_query_per_cell(catalog, alice_client):
    features = Feature.objects.annotate(n=Count("capabilities"))
    small, large = _smallest_and_largest(features, lambda f: f.n)
    _same_queries_for_both(alice_client, "catalog:feature", small, large, key="key")
    cells = Capability.objects.all()
    small, large = _smallest_and_largest(cells, lambda c: len(selectors.sibling_cells(c)))
    _same_queries_for_both(alice_client, "catalog:capability", small, large)


def test_comparing_four_engines_reads_as_many_queries_as_comparing_two(catalog, alice_client):
    slugs = ["vllm", "sglang", "tensorrt-llm", "llama-cpp"]
    assert Engine.objects.filter(slug__in=slugs).count() == 4

    def compared(count: int) -> int:
        return page_queries(alice_client, "catalog:compare", query={"engines": slugs[:count]})

    assert compared(2) == compared(4) <= DETAIL_BUDGET
