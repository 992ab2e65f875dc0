import pytest

from apps.accounts.models import Invitation, Membership
from apps.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _membership(user, team) -> Membership:
    return Membership.objects.get(user=user, team=team)


def test_a_team_admin_changes_a_members_role_and_it_is_audited(alice_client, bob, acme):
    membership = _membership(bob, acme)
    response = alice_client.post(
        f"/accounts/team/members/{membership.pk}/role/", {"role": "approver"}, follow=True
    )
    assert "bob is now approver." in response.content.decode()
    assert _membership(bob, acme).role == "approver"
    event = AuditEvent.objects.get(action="membership.update")
    assert event.team_id == acme.pk
    assert (event.before["role"], event.after["role"]) == ("engineer", "approver")


def test_a_role_that_is_not_one_is_refused(alice_client, bob, acme):
    membership = _membership(bob, acme)
    response = alice_client.post(
        f"/accounts/team/members/{membership.pk}/role/", {"role": "owner"}, follow=True
    )
    assert "Choose one of the roles." in response.content.decode()
    assert _membership(bob, acme).role == "engineer"


def test_an_engineer_can_neither_change_a_role_nor_invite(bob_client, alice, acme):
    membership = _membership(alice, acme)
    role_change = bob_client.post(
        f"/accounts/team/members/{membership.pk}/role/", {"role": "viewer"}
    )
    invite = bob_client.post(
        "/accounts/team/members/", {"invitee": "dave@example.org", "role": "admin"}
    )
    assert (role_change.status_code, invite.status_code) == (403, 403)
    assert _membership(alice, acme).role == "admin"
    assert not Invitation.objects.exists()


def test_an_engineer_sees_the_members_but_no_controls(bob_client, alice):
    page = bob_client.get("/accounts/team/members/").content.decode()
    assert "alice" in page and "Only team admins change membership." in page
    assert 'id="invite-form"' not in page and "Change role" not in page


def test_the_last_admin_cannot_give_up_the_admin_role(alice_client, alice, acme):
    membership = _membership(alice, acme)
    response = alice_client.post(
        f"/accounts/team/members/{membership.pk}/role/", {"role": "viewer"}, follow=True
    )
    assert "last admin cannot give up" in response.content.decode()
    assert _membership(alice, acme).role == "admin"


def test_removing_a_member_asks_first_then_removes_with_an_audit_event(alice_client, bob, acme):
    membership = _membership(bob, acme)
    url = f"/accounts/team/members/{membership.pk}/remove/"
    confirm = alice_client.get(url)
    assert "Remove bob from Acme?" in confirm.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()
    answer = alice_client.post(url, follow=True)
    assert "bob was removed from Acme." in answer.content.decode()
    assert not Membership.objects.filter(pk=membership.pk).exists()
    event = AuditEvent.objects.get(action="membership.delete")
    assert event.before["user_id"] == bob.pk and event.team_id == acme.pk


def test_the_last_admin_cannot_be_removed(alice_client, alice, acme):
    membership = _membership(alice, acme)
    answer = alice_client.post(f"/accounts/team/members/{membership.pk}/remove/", follow=True)
    assert "last admin cannot be removed" in answer.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_an_engineer_cannot_open_the_remove_confirmation(bob_client, alice, acme):
    membership = _membership(alice, acme)
    assert bob_client.get(f"/accounts/team/members/{membership.pk}/remove/").status_code == 403


def test_a_user_in_two_teams_switches_the_team_they_act_for(alice_client, alice, globex):
    Membership.objects.create(user=alice, team=globex, role="viewer")
    assert alice_client.get("/").context["current_team"].slug == "acme"
    alice_client.post("/accounts/team/switch/", {"team_id": globex.pk, "next": "/"})
    assert alice_client.get("/").context["current_team"].slug == "globex"


def test_a_user_cannot_switch_to_a_team_they_are_not_in(bob_client, globex):
    bob_client.post("/accounts/team/switch/", {"team_id": globex.pk})
    assert bob_client.get("/").context["current_team"].slug == "acme"


def test_pages_need_a_login(client):
    response = client.get("/audit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
