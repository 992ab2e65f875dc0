"""Team membership by invitation: a one-time link, kept as a digest, that signs a new person up
or lets a signed-in account join; nothing tells whether a username exists."""

import hashlib
import re
import socket
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from apps.accounts.models import Invitation, Membership
from apps.audit.models import AuditEvent
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-unusual-passphrase-41"


def invite(client: Client, invitee: str, role: str = "approver") -> str:
    """Invite through the Members page; the path of the link it shows once."""
    response = client.post("/accounts/team/members/", {"invitee": invitee, "role": role})
    assert response.status_code == 200, response.content.decode()
    return response.context["new_link"].removeprefix("http://testserver")


def open_link(client: Client, path: str) -> str:
    """Follow a usable link the way a browser does; the address of the page it lands on."""
    response = client.get(path)
    assert response.status_code == 302, response.content.decode()
    return response["Location"]


def sign_up(path: str, username: str = "dave", password: str = NEW_PASSWORD, **extra):
    """A new visitor opens the link and posts the sign-up form; a spent link answers at once."""
    body = {"username": username, "password1": password, "password2": password, **extra}
    client = Client()
    opened = client.get(path)
    if opened.status_code != 302:
        return opened
    return client.post(opened["Location"], body)


def test_the_link_is_shown_once_and_only_its_digest_is_kept(alice_client, acme):
    path = invite(alice_client, "dave@example.org")
    secret = path.split("/")[-2]
    invitation = Invitation.objects.get()
    assert secret.startswith(f"ssi_{invitation.prefix}_")
    assert invitation.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert (invitation.email, invitation.username) == ("dave@example.org", "")
    assert invitation.role == "approver"
    page = alice_client.get("/accounts/team/members/").content.decode()
    assert secret not in page and "dave@example.org" in page
    event = AuditEvent.objects.get(action="invitation.create")
    assert event.team_id == acme.pk and "digest" not in event.after


def _without_the_link(page: str, name: str) -> str:
    page = re.sub(r"ssi_\w+_[\w-]+", "LINK", page)
    page = re.sub(r'name="csrfmiddlewaretoken" value="\w+"', "", page)
    return re.sub(r"<table id=\"invitations\">.*?</table>", "", page, flags=re.S).replace(name, "X")


def test_inviting_a_username_answers_alike_whether_it_exists_or_not(alice_client, charlie):
    members_page = "/accounts/team/members/"
    existing = alice_client.post(members_page, {"invitee": "charlie", "role": "viewer"})
    Invitation.objects.all().delete()
    missing = alice_client.post(members_page, {"invitee": "zed", "role": "viewer"})
    assert existing.status_code == missing.status_code == 200
    existing_page = _without_the_link(existing.content.decode(), "charlie")
    assert existing_page == _without_the_link(missing.content.decode(), "zed")
    assert "No user" not in existing_page


def test_a_new_person_signs_up_through_the_link_and_joins_with_the_role(alice_client, acme):
    path = invite(alice_client, "dave@example.org")
    form = Client().get(path, follow=True).content.decode()
    assert "alice invites you to the team <strong>Acme</strong>" in form
    assert 'id="sign-up-form"' in form
    answer = sign_up(path)
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    dave = get_user_model().objects.get(username="dave")
    assert dave.email == "dave@example.org"
    assert Membership.objects.get(user=dave, team=acme).role == "approver"
    invitation = Invitation.objects.get()
    assert invitation.accepted_by == dave and invitation.accepted_at is not None
    events = AuditEvent.objects.filter(actor_name="dave").order_by("pk")
    actions = list(events.values_list("action", flat=True))
    assert actions == ["user.create", "membership.create", "invitation.accept"]
    assert Client().login(username="dave", password=NEW_PASSWORD)


def test_the_secret_leaves_the_address_bar_for_the_session_until_it_is_spent(alice_client):
    path = invite(alice_client, "dave@example.org")
    secret = path.split("/")[-2]
    visitor = Client()
    opened = open_link(visitor, path)
    assert opened == "/accounts/invitations/open/" and secret not in opened
    assert visitor.session["_invitation_link"] == secret
    page = visitor.get(opened).content.decode()
    assert 'id="sign-up-form"' in page and secret not in page
    body = {"username": "dave", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    assert visitor.post(opened, body).status_code == 302
    assert "_invitation_link" not in visitor.session
    assert visitor.get(opened).status_code == 404


def test_the_opened_page_without_a_link_in_the_session_is_404(client):
    answer = client.get("/accounts/invitations/open/")
    assert answer.status_code == 404 and "not valid" in answer.content.decode()


def test_the_link_works_once(alice_client):
    path = invite(alice_client, "dave@example.org")
    sign_up(path)
    again = sign_up(path, username="eve")
    assert again.status_code == 410
    assert "This invitation has been used already." in again.content.decode()
    assert not get_user_model().objects.filter(username="eve").exists()


def test_an_expired_link_is_refused(alice_client):
    path = invite(alice_client, "dave@example.org")
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = sign_up(path)
    assert answer.status_code == 410 and "This invitation expired on" in answer.content.decode()
    assert not get_user_model().objects.filter(username="dave").exists()


def test_the_lifetime_of_a_link_is_the_setting(alice_client, settings):
    settings.INVITATION_TTL_S = 3600
    invite(alice_client, "dave@example.org")
    lifetime = Invitation.objects.get().expires_at - timezone.now()
    assert timedelta(minutes=59) < lifetime <= timedelta(hours=1)


def test_a_withdrawn_link_is_refused_and_the_withdrawal_audited(alice_client, acme):
    path = invite(alice_client, "dave@example.org")
    invitation = Invitation.objects.get()
    answer = alice_client.post(f"/accounts/team/invitations/{invitation.pk}/withdraw/", follow=True)
    assert "The invitation of dave@example.org is withdrawn." in answer.content.decode()
    assert AuditEvent.objects.get(action="invitation.withdraw").team_id == acme.pk
    refused = Client().get(path)
    assert refused.status_code == 410
    assert "withdrawn by a team admin" in refused.content.decode()


def test_a_made_up_link_is_404(client):
    for secret in ("nonsense", "ssi_00000000_guess"):
        answer = client.get(f"/accounts/invitations/{secret}/")
        assert answer.status_code == 404 and "not valid" in answer.content.decode()


def test_sign_up_mistakes_are_form_errors_and_leave_the_link_usable(alice_client):
    path = invite(alice_client, "dave@example.org")
    mismatch = sign_up(path, password2="something-else-entirely")
    weak = sign_up(path, password="password")
    assert (mismatch.status_code, weak.status_code) == (400, 400)
    assert "The two password fields didn\u2019t match." in mismatch.content.decode()
    assert "This password is too common." in weak.content.decode()
    assert not get_user_model().objects.filter(username="dave").exists()
    assert Invitation.objects.get().accepted_at is None
    assert sign_up(path).status_code == 302


def test_a_signed_in_user_joins_by_an_invitation_to_their_username(alice_client, charlie, acme):
    path = invite(alice_client, "charlie", role="viewer")
    charlie_client = Client()
    charlie_client.force_login(charlie)
    opened = open_link(charlie_client, path)
    assert 'id="accept-invitation"' in charlie_client.get(opened).content.decode()
    answer = charlie_client.post(opened, follow=True)
    assert "You joined Acme as viewer." in answer.content.decode()
    assert Membership.objects.get(user=charlie, team=acme).role == "viewer"
    assert answer.context["current_team"] == acme


def test_an_invitation_to_a_username_is_not_taken_by_another_account(alice_client, charlie, acme):
    path = invite(alice_client, "zed")
    charlie_client = Client()
    charlie_client.force_login(charlie)
    opened = open_link(charlie_client, path)
    assert "for another account" in charlie_client.get(opened).content.decode()
    assert charlie_client.post(opened).status_code == 400
    assert not Membership.objects.filter(user=charlie, team=acme).exists()


def test_an_invitation_to_a_username_offers_no_sign_up(alice_client):
    path = invite(alice_client, "zed")
    page = Client().get(path, follow=True).content.decode()
    assert 'id="sign-up-form"' not in page and "Log in as zed to accept" in page
    assert sign_up(path, username="zed").status_code == 400
    assert not get_user_model().objects.filter(username="zed").exists()


def test_an_existing_account_accepts_an_e_mail_invitation_after_signing_in(
    alice_client, charlie, acme
):
    path = invite(alice_client, "charlie@example.org")
    client = Client()
    opened = open_link(client, path)
    page = client.get(opened).content.decode()
    assert f"/accounts/login/?next={opened}" in page
    login = {"username": "charlie", "password": PASSWORD}
    assert client.post(f"/accounts/login/?next={opened}", login)["Location"] == opened
    client.post(opened)
    assert Membership.objects.get(user=charlie, team=acme).role == "approver"


def test_a_member_is_told_they_are_in_the_team_and_the_link_stays_unused(alice_client, bob_client):
    path = invite(alice_client, "someone@example.org")
    answer = bob_client.post(open_link(bob_client, path))
    assert answer.status_code == 400
    assert "You are a member of Acme already." in answer.content.decode()
    assert Invitation.objects.get().accepted_at is None


def test_inviting_a_member_by_username_says_so(alice_client, bob):
    answer = alice_client.post("/accounts/team/members/", {"invitee": "bob", "role": "admin"})
    assert answer.status_code == 400
    assert answer.context["form"].errors["invitee"] == ["bob is a member of the team already."]


@pytest.mark.parametrize("invitee", ["not an@address", "two words", ""])
def test_an_invitee_that_is_neither_an_address_nor_a_username_is_a_form_error(
    alice_client, invitee
):
    answer = alice_client.post("/accounts/team/members/", {"invitee": invitee, "role": "viewer"})
    assert answer.status_code == 400 and answer.context["form"].errors["invitee"]
    assert not Invitation.objects.exists()


def test_the_link_is_mailed_when_an_e_mail_backend_is_configured(alice_client, settings):
    settings.EMAIL_CONFIGURED = True
    response = alice_client.post(
        "/accounts/team/members/", {"invitee": "dave@example.org", "role": "engineer"}
    )
    assert "It was also sent to dave@example.org." in response.content.decode()
    (message,) = mail.outbox
    assert message.to == ["dave@example.org"] and "Acme" in message.subject
    assert response.context["new_link"] in message.body


def test_nothing_is_mailed_without_an_e_mail_backend(alice_client, settings):
    settings.EMAIL_CONFIGURED = False
    invite(alice_client, "dave@example.org")
    assert mail.outbox == []


def test_a_failed_sending_tells_the_admin_to_pass_the_link_on(alice_client, settings):
    with socket.socket() as closed:  # a port nothing listens on once this socket is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.EMAIL_CONFIGURED = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    response = alice_client.post(
        "/accounts/team/members/", {"invitee": "dave@example.org", "role": "engineer"}
    )
    assert response.status_code == 200
    assert "could not be sent; pass the link on yourself" in response.content.decode()
    assert Invitation.objects.count() == 1


def test_charlie_cannot_withdraw_an_invitation_of_acme(alice_client, charlie_client):
    invite(alice_client, "dave@example.org")
    invitation = Invitation.objects.get()
    answer = charlie_client.post(f"/accounts/team/invitations/{invitation.pk}/withdraw/")
    assert answer.status_code == 404
    invitation.refresh_from_db()
    assert invitation.withdrawn_at is None
