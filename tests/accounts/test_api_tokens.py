import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from apps.accounts.models import ApiToken, Membership
from apps.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _create_token_in_page(client: Client) -> str:
    response = client.post("/accounts/profile/", {"name": "ci"})
    assert response.status_code == 200
    return response.context["new_token"]


def test_a_token_is_shown_once_and_stored_only_as_a_digest(alice_client):
    plaintext = _create_token_in_page(alice_client)
    token = ApiToken.objects.get()
    assert plaintext.startswith(f"ssk_{token.prefix}_")
    assert plaintext not in token.digest and len(token.digest) == 64
    assert plaintext not in alice_client.get("/accounts/profile/").content.decode()
    event = AuditEvent.objects.get(action="api_token.create")
    assert "digest" not in event.after


def test_a_token_authenticates_the_api_for_its_team(alice_client):
    plaintext = _create_token_in_page(alice_client)
    response = Client().get("/api/v1/audit/events/", HTTP_AUTHORIZATION=f"Token {plaintext}")
    assert response.status_code == 200
    assert response.json()["count"] >= 1


def test_a_revoked_token_is_refused_with_401(alice_client):
    plaintext = _create_token_in_page(alice_client)
    token = ApiToken.objects.get()
    alice_client.post(f"/accounts/tokens/{token.pk}/revoke/")
    response = Client().get("/api/v1/audit/events/", HTTP_AUTHORIZATION=f"Token {plaintext}")
    assert response.status_code == 401


def test_a_guessed_token_with_a_real_prefix_is_refused(alice_client):
    _create_token_in_page(alice_client)
    token = ApiToken.objects.get()
    response = Client().get("/api/v1/", HTTP_AUTHORIZATION=f"Token ssk_{token.prefix}_guess")
    assert response.status_code == 401


def test_charlie_cannot_revoke_alices_token(alice_client, charlie_client):
    _create_token_in_page(alice_client)
    token = ApiToken.objects.get()
    charlie_client.post(f"/accounts/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_command_creates_the_membership_and_prints_the_token_last(charlie):
    out = io.StringIO()
    call_command("api_token_create", "charlie", "--team", "newteam", "--role", "viewer", stdout=out)
    plaintext = out.getvalue().strip().splitlines()[-1]
    assert Membership.objects.get(user=charlie, team__slug="newteam").role == "viewer"
    response = Client().get("/api/v1/audit/events/", HTTP_AUTHORIZATION=f"Token {plaintext}")
    assert response.status_code == 200


def test_the_command_refuses_an_unknown_user():
    with pytest.raises(CommandError, match="No user is called 'nobody'"):
        call_command("api_token_create", "nobody")


def test_the_api_index_lists_the_endpoints(alice_client):
    body = alice_client.get("/api/v1/").json()
    assert "audit/events" in body


def test_the_openapi_schema_and_docs_are_served(alice_client):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/v1/audit/events/" in schema.json()["paths"]
    assert alice_client.get("/api/schema/swagger/").status_code == 200
