"""Reads about users, teams, tokens and invitations."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import ApiToken, Invitation, Membership, Team
from apps.accounts.secrets import matches, split_prefix

API_TOKEN_KIND = "ssk"
INVITATION_KIND = "ssi"


def memberships_of(*, user: Any) -> QuerySet[Membership]:
    if not user.is_authenticated:
        return Membership.objects.none()
    return Membership.objects.filter(user=user).select_related("team")


def membership_for(*, user: Any, team: Team | None) -> Membership | None:
    if team is None or not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).select_related("team").first()


def team_members(*, team: Team) -> QuerySet[Membership]:
    return Membership.objects.filter(team=team).select_related("user").order_by("user__username")


def pending_invitations(*, team: Team) -> QuerySet[Invitation]:
    """Invitations of the team not yet used, withdrawn or expired, newest first."""
    return Invitation.objects.filter(
        team=team, accepted_at=None, withdrawn_at=None, expires_at__gt=timezone.now()
    ).select_related("invited_by")


def invitation_for_link(*, plaintext: str) -> Invitation | None:
    """The invitation this link's secret belongs to, whatever its state; None for a bad link."""
    prefix = split_prefix(plaintext, INVITATION_KIND)
    if prefix is None:
        return None
    invitation = Invitation.objects.select_related("team").filter(prefix=prefix).first()
    if invitation is None or not matches(plaintext, invitation.digest):
        return None
    return invitation


def api_tokens_of(*, user: Any) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).select_related("team")


def api_token_authenticate(*, plaintext: str) -> ApiToken | None:
    """The active token matching this secret whose user still belongs to its team, else None."""
    prefix = split_prefix(plaintext, API_TOKEN_KIND)
    if prefix is None:
        return None
    token = ApiToken.objects.select_related("user", "team").filter(prefix=prefix).first()
    if token is None or not token.is_active or not matches(plaintext, token.digest):
        return None
    if not token.user.is_active or membership_for(user=token.user, team=token.team) is None:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token
