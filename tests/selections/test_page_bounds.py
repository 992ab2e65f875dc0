"""The candidate list's page and page_size are checked before they reach the database: a page
beyond a bigint offset, or a page_size that is no number, is a 400 naming the parameter."""

from __future__ import annotations

import pytest

from tests.selections.helpers import create_selection

URL = "/api/v1/selections/"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("page=99999999999999999999", "page"),
        ("page=" + "9" * 5000, "page"),
        ("page=0", "page"),
        ("page_size=Z", "page_size"),
        ("page_size=501", "page_size"),
        ("page=-1", "page"),
    ],
)
def test_a_page_out_of_range_is_a_400_naming_it(
    alice_client, alice, acme, catalog, goal_payload, query, name
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    response = alice_client.get(f"{URL}{selection.pk}/candidates/?{query}")
    assert response.status_code == 400
    assert name in response.json()


def test_the_last_allowed_page_is_an_empty_page(alice_client, alice, acme, catalog, goal_payload):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    response = alice_client.get(f"{URL}{selection.pk}/candidates/?page=1000000&page_size=500")
    assert response.status_code == 200
    assert response.json()["kept"] == []
