"""The decisions API: lifecycle through HTTP, 403/409 answers, team scoping, the schema."""

from __future__ import annotations

import pytest

from tests.conftest import logged_in
from tests.decisions.factories import accepted, draft

API = "/api/v1/decisions/"


def create_body(selection) -> dict:
    first, second = selection.candidates.order_by("rank")
    return {
        "selection": selection.pk,
        "title": "Serve on vLLM",
        "chosen_candidate_id": first.pk,
        "rationale": "Fastest at the goal rate.",
        "dropped": {str(second.pk): "Misses TTFT."},
        "risks": "None known.",
    }


def test_a_record_goes_from_draft_to_accepted_through_the_api(
    alice_client, approver_bob, selection
):
    created = alice_client.post(API, create_body(selection), content_type="application/json")
    assert created.status_code == 201, created.content
    record = created.json()
    assert record["reference"] == "DR-1" and record["status"] == "draft"
    assert record["goal"]["slo"]["ttft_ms"] == 500
    assert record["dropped"] == {"B": "Misses TTFT."}

    proposed = alice_client.post(f"{API}{record['id']}/propose/")
    assert proposed.json()["status"] == "proposed"
    accepted_answer = logged_in(approver_bob).post(f"{API}{record['id']}/accept/")
    assert accepted_answer.status_code == 200
    assert accepted_answer.json()["decided_by"] == "bob"


def test_the_author_approving_their_own_record_gets_403(alice_client, acme, alice, selection):
    record = draft(alice, acme, selection)
    alice_client.post(f"{API}{record.pk}/propose/")
    answer = alice_client.post(f"{API}{record.pk}/accept/")
    assert answer.status_code == 403
    assert "author" in answer.json()["detail"]


def test_editing_an_accepted_record_gets_409(alice_client, acme, alice, approver_bob, selection):
    record = accepted(alice, approver_bob, acme, selection)
    body = {"title": "Changed after the fact"}
    answer = alice_client.put(f"{API}{record.pk}/", body, content_type="application/json")
    assert answer.status_code == 409
    assert answer.json()["code"] == "frozen"


def test_a_viewer_cannot_write(client, acme, alice, selection, django_user_model):
    from apps.accounts.models import Membership

    viewer = django_user_model.objects.create_user("vera", password="x")
    Membership.objects.create(user=viewer, team=acme, role="viewer")
    client.force_login(viewer)
    answer = client.post(API, create_body(selection), content_type="application/json")
    assert answer.status_code == 403


def test_superseding_through_the_api_makes_a_linked_draft(
    alice_client, acme, alice, approver_bob, selection
):
    older = accepted(alice, approver_bob, acme, selection)
    answer = alice_client.post(f"{API}{older.pk}/supersede/", {}, content_type="application/json")
    assert answer.status_code == 201
    assert answer.json()["supersedes"] == older.number


@pytest.mark.parametrize("suffix", ["", "propose/", "accept/"])
def test_charlie_cannot_see_or_touch_alices_records(charlie_client, acme, alice, selection, suffix):
    record = draft(alice, acme, selection)
    answer = (
        charlie_client.post(f"{API}{record.pk}/{suffix}")
        if suffix
        else charlie_client.get(f"{API}{record.pk}/")
    )
    assert answer.status_code == 404


def test_charlie_lists_none_of_alices_records(charlie_client, acme, alice, selection):
    draft(alice, acme, selection)
    assert charlie_client.get(API).json()["count"] == 0


def test_the_openapi_schema_documents_the_decision_endpoints(alice_client):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    for path in ("", "{id}/", "{id}/propose/", "{id}/accept/", "{id}/reject/", "{id}/supersede/"):
        assert f"/api/v1/decisions/{path}" in paths
