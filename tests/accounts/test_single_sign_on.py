"""Single sign-on through a real OpenID Connect exchange with a stand-in provider on its own
port: discovery configures the client, the browser's redirects are followed by hand, the
server fetches the token and the JWKS itself."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from apps.accounts.choices import Role
from apps.accounts.models import Membership, SsoIdentity
from apps.accounts.services import invitation_create
from apps.audit.models import AuditEvent
from config.env import parse_team_map
from tests.accounts.oidc_provider import StandInProvider, configure_sso

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider():
    with StandInProvider() as running:
        yield running


@pytest.fixture
def sso(settings, provider) -> StandInProvider:
    return configure_sso(settings, provider)


def sign_in(client: Client):
    """Click the button, let the provider sign in its person, come back with the code."""
    start = client.get("/accounts/sso/login/")
    assert start.status_code == 302 and start["Location"].startswith(f"{_issuer(start)}/authorize")
    at_provider = requests.get(start["Location"], allow_redirects=False, timeout=5)
    assert at_provider.status_code == 302, at_provider.text
    back = urlsplit(at_provider.headers["Location"])
    return client.get(f"{back.path}?{back.query}")


def _issuer(response) -> str:
    parts = urlsplit(response["Location"])
    return f"{parts.scheme}://{parts.netloc}"


def test_single_sign_on_is_off_by_default(client):
    assert client.get("/accounts/sso/login/").status_code == 404
    assert client.get("/accounts/sso/callback/?code=x&state=y").status_code == 404
    assert 'id="sso-login"' not in client.get("/accounts/login/").content.decode()


def test_a_mapped_group_signs_in_as_a_team_member_with_its_role(sso, acme):
    sso.signs_in(sub="u-erin", email="erin@example.com", preferred_username="erin")
    sso.person["groups"] = ["ml-approvers", "unrelated"]
    client = Client()
    assert 'id="sso-login"' in client.get("/accounts/login/").content.decode()

    done = sign_in(client)

    assert done.status_code == 302 and done["Location"] == "/"
    erin = get_user_model().objects.get(username="erin")
    assert not erin.has_usable_password()
    assert Membership.objects.get(user=erin, team=acme).role == Role.APPROVER
    assert "as <strong>Approver</strong>" in client.get("/").content.decode()
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"user.create", "membership.create"} <= actions

    again = Client()
    sign_in(again)
    assert get_user_model().objects.filter(email="erin@example.com").count() == 1
    assert SsoIdentity.objects.get().user == erin


def test_someone_with_no_mapped_group_waits_until_an_admin_invites_them(sso, alice, acme):
    sso.signs_in(sub="u-gil", email="gil@example.com", preferred_username="gil")
    client = Client()
    sign_in(client)

    home = client.get("/").content.decode()
    assert "Waiting for a team admin to add you" in home and "<strong>gil</strong>" in home
    gil = get_user_model().objects.get(username="gil")
    assert not Membership.objects.filter(user=gil).exists()

    _, secret = invitation_create(actor_user=alice, team=acme, invitee="gil", role=Role.APPROVER)
    opened = client.get(f"/accounts/invitations/{secret}/")["Location"]
    joined = client.post(opened)

    assert joined.status_code == 302
    assert Membership.objects.get(user=gil, team=acme).role == Role.APPROVER
    assert "Waiting for a team admin" not in client.get("/").content.decode()


def test_a_claimed_email_never_takes_over_an_account_made_here(sso, alice):
    alice.email = "alice@example.com"
    alice.save()
    sso.signs_in(sub="u-mallory", email="alice@example.com", preferred_username="alice")
    client = Client()
    sign_in(client)

    made = SsoIdentity.objects.get().user
    assert made != alice and made.username == "alice-2"
    assert client.get("/").context["user"] == made


@pytest.mark.parametrize(
    "forged",
    [{"aud": "another-client"}, {"iss": "http://127.0.0.1:1"}, {"exp": 1_000_000_000}],
    ids=["audience", "issuer", "expired"],
)
def test_an_id_token_for_another_client_or_issuer_or_expired_is_refused(sso, forged):
    sso.signs_in(sub="u-eve", email="eve@example.com", preferred_username="eve")
    sso.token_overrides = forged
    client = Client()

    refused = sign_in(client)

    assert refused.status_code == 302 and refused["Location"] == "/accounts/login/?sso=failed"
    assert not get_user_model().objects.filter(username="eve").exists()
    page = client.get(refused["Location"]).content.decode()
    assert "Single sign-on did not complete" in page


def test_a_malformed_team_map_stops_start_up_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match="OIDC_TEAM_MAP: 'ops=acme:boss'"):
        parse_team_map("OIDC_TEAM_MAP", "ml=acme:viewer,ops=acme:boss")
    assert parse_team_map("OIDC_TEAM_MAP", " ml = acme:viewer ") == {"ml": ("acme", "viewer")}
