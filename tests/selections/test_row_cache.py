"""The candidate page's kept rows come from the rendered cache only while they show the same."""

from __future__ import annotations

import inspect
import re

import pytest
from django.core.cache import caches
from django.urls import reverse

from apps.audit.services import Actor
from apps.catalog.services import published_import
from apps.selections import row_cache, services
from tests.catalog.published_rows import sample_row
from tests.selections.helpers import create_selection


def _rows(html: str) -> dict[str, str]:
    """Each kept row's HTML by candidate id."""
    pattern = re.compile(r'<tr data-candidate="(\d+)".*?</tr>', flags=re.S)
    return {match.group(1): match.group(0) for match in pattern.finditer(html)}


def _page(client, selection) -> dict[str, str]:
    answer = client.get(reverse("selections:candidates", args=[selection.pk]))
    assert answer.status_code == 200
    return _rows(answer.content.decode())


def test_a_kept_row_is_rendered_once_and_drawn_again_when_what_it_shows_changes(
    catalog, alice, acme, alice_client, goal_payload
):
    caches["rendered"].clear()
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    first = selection.candidates.filter(outcome="kept").order_by("rank").first()

    before = _page(alice_client, selection)
    cached = len(caches["rendered"]._cache)  # locmem: one entry per distinct row
    assert cached == len(before) > 0
    assert _page(alice_client, selection) == before  # served from the cache, unchanged
    assert len(caches["rendered"]._cache) == cached

    services.candidates_choose(actor_user=alice, selection=selection, candidate_ids=[first.pk])
    chosen = _page(alice_client, selection)
    assert "checked" in chosen[str(first.pk)] and "checked" not in before[str(first.pk)]
    assert ">chosen</span>" in chosen[str(first.pk)]

    rows = [sample_row(id="r1", batch_size="8", silicon_data_source="x")]
    published_import(actor=Actor.system("test"), rows=rows)
    published = _page(alice_client, selection)
    assert 'data-source-row="r1"' in published[str(first.pk)]


@pytest.mark.parametrize(
    "module",
    [
        ".facts",  # `signed_percent`, a filter of the facts library
        ".operating_point",  # `in_flight`, written there and registered by the layouts library
        ".estimator",  # Parallelism, whose rule the layouts library's copies filter applies
    ],
)
def test_an_edit_of_a_filter_or_tag_the_row_uses_makes_new_row_keys(monkeypatch, module):
    before = row_cache._templates_digest.__wrapped__()
    read = inspect.getsource

    def edited(source_of):
        return read(source_of) + ("\n# edited" if source_of.__name__.endswith(module) else "")

    monkeypatch.setattr(inspect, "getsource", edited)
    assert row_cache._templates_digest.__wrapped__() != before
