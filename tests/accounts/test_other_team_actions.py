"""Another user's token or another team's membership looks missing: 404 (it was a redirect)."""

from apps.accounts.models import Membership
from apps.accounts.services import api_token_create
from apps.audit.services import Actor


def test_charlie_gets_404_revoking_alices_token(alice, acme, charlie_client):
    token, _ = api_token_create(actor=Actor.for_user(alice), user=alice, team=acme, name="ci")
    assert charlie_client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_charlie_gets_404_removing_a_member_of_acme(alice, bob, acme, charlie_client):
    membership = Membership.objects.get(user=bob, team=acme)
    response = charlie_client.post(f"/accounts/team/members/{membership.pk}/remove/")
    assert response.status_code == 404
    assert Membership.objects.filter(pk=membership.pk).exists()
