import pytest

from apps.accounts.models import Membership
from apps.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_a_team_admin_adds_a_member_with_a_role_and_it_is_audited(alice_client, charlie, acme):
    response = alice_client.post(
        "/accounts/team/members/", {"username": "charlie", "role": "viewer"}
    )
    assert response.status_code == 302
    assert Membership.objects.get(user=charlie, team=acme).role == "viewer"
    event = AuditEvent.objects.get(action="membership.create")
    assert event.team_id == acme.pk and event.after["role"] == "viewer"


def test_an_engineer_cannot_change_membership(bob_client, charlie, acme):
    response = bob_client.post("/accounts/team/members/", {"username": "charlie", "role": "admin"})
    assert response.status_code == 403
    assert not Membership.objects.filter(user=charlie, team=acme).exists()


def test_an_unknown_username_is_a_form_error(alice_client):
    response = alice_client.post(
        "/accounts/team/members/", {"username": "nobody", "role": "viewer"}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["username"] == ["No user is called 'nobody'."]


def test_the_last_admin_cannot_be_removed(alice_client, alice, acme):
    membership = Membership.objects.get(user=alice, team=acme)
    alice_client.post(f"/accounts/team/members/{membership.pk}/remove/")
    assert Membership.objects.filter(pk=membership.pk).exists()


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
