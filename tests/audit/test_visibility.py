import pytest
from django.db import transaction

from apps.audit.services import Actor, audit_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_event(alice, acme):
    with transaction.atomic():
        return audit_record(
            actor=Actor.for_user(alice),
            action="selection.create",
            object_type="selections.selection",
            object_id=1,
            object_repr="Acme secret plan",
            team=acme,
        )


def test_charlie_sees_none_of_alices_events_on_the_page(acme_event, charlie_client):
    response = charlie_client.get("/audit/")
    assert response.status_code == 200
    assert "Acme secret plan" not in response.content.decode()


def test_charlie_sees_none_of_alices_events_in_the_api_or_csv(acme_event, charlie_client):
    assert charlie_client.get("/api/v1/audit/events/").json()["count"] == 0
    assert (
        "Acme secret plan"
        not in b"".join(charlie_client.get("/audit/events.csv").streaming_content).decode()
    )


def test_bob_sees_his_teams_events(acme_event, bob_client):
    listing = bob_client.get("/api/v1/audit/events/").json()
    assert [row["object_repr"] for row in listing["results"]] == ["Acme secret plan"]


def test_staff_see_every_teams_events(acme_event, curator):
    from tests.conftest import logged_in

    assert logged_in(curator).get("/api/v1/audit/events/").json()["count"] == 1


def test_the_csv_export_follows_the_filters(alice, acme, alice_client):
    with transaction.atomic():
        for action in ("a.create", "b.create", "a.create"):
            audit_record(actor=Actor.for_user(alice), action=action, object_type="t", team=acme)
    lines = (
        b"".join(alice_client.get("/audit/events.csv?action=a.create").streaming_content)
        .decode()
        .splitlines()
    )
    assert lines[0].startswith("id,occurred_at")
    assert len(lines) == 3
    assert all(",a.create," in line for line in lines[1:])


def test_the_audit_page_is_paginated(alice, acme, alice_client):
    with transaction.atomic():
        for n in range(55):
            audit_record(
                actor=Actor.for_user(alice),
                action="bulk.create",
                object_type="t",
                object_id=n,
                team=acme,
            )
    first = alice_client.get("/audit/").content.decode()
    assert "Page 1 of 2 (55 in all)" in first
    second = alice_client.get("/audit/?page=2")
    assert second.context["page"].object_list[0].object_id == "4"
