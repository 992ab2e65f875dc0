"""Writes for teams, memberships and API tokens; each one transaction with its audit event."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.choices import Role
from apps.accounts.models import ApiToken, Membership, Team
from apps.accounts.secrets import issue_secret
from apps.accounts.selectors import API_TOKEN_KIND
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot


def require_role(*, user: Any, team: Team | None, minimum: str) -> Membership:
    """The user's membership if its role is at least `minimum`; else PermissionDenied."""
    membership = None if team is None else Membership.objects.filter(user=user, team=team).first()
    if membership is None or not membership.has_role(minimum):
        raise PermissionDenied(f"This needs the {minimum} role in the team.")
    return membership


@transaction.atomic
def team_create(*, actor: Actor, name: str, slug: str = "", owner: Any = None) -> Team:
    slug = slug or slugify(name)
    if not slug:
        raise ValidationError({"name": "A team needs a name with letters or digits."})
    if Team.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"A team with the slug {slug!r} exists already."})
    team = Team.objects.create(name=name, slug=slug)
    audit_record(actor=actor, action="team.create", obj=team, team=team, after=snapshot(team))
    if owner is not None:
        _membership_write(actor=actor, team=team, user=owner, role=Role.ADMIN)
    return team


def _membership_write(*, actor: Actor, team: Team, user: Any, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError(
            {"role": f"{role!r} is not a role; use one of {', '.join(Role.values)}."}
        )
    existing = Membership.objects.filter(team=team, user=user).first()
    before = snapshot(existing) if existing else None
    membership, _ = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    audit_record(
        actor=actor,
        action="membership.update" if existing else "membership.create",
        obj=membership,
        team=team,
        before=before,
        after=snapshot(membership),
    )
    return membership


@transaction.atomic
def membership_set(*, actor_user: Any, team: Team, username: str, role: str) -> Membership:
    """A team admin adds a user to the team or changes their role."""
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": f"No user is called {username!r}."})
    if user == actor_user and role != Role.ADMIN and _admin_count(team) == 1:
        raise ValidationError({"role": "The team's last admin cannot give up the admin role."})
    return _membership_write(actor=Actor.for_user(actor_user), team=team, user=user, role=role)


def _admin_count(team: Team) -> int:
    return Membership.objects.filter(team=team, role=Role.ADMIN).count()


@transaction.atomic
def membership_remove(*, actor_user: Any, team: Team, membership_id: int) -> None:
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    membership = Membership.objects.select_for_update().filter(pk=membership_id, team=team).first()
    if membership is None:
        raise ValidationError({"membership": "That member is not in this team."})
    if membership.role == Role.ADMIN and _admin_count(team) == 1:
        raise ValidationError({"membership": "The team's last admin cannot be removed."})
    before = snapshot(membership)
    membership.delete()
    audit_record(
        actor=Actor.for_user(actor_user),
        action="membership.delete",
        object_type="accounts.membership",
        object_id=membership_id,
        object_repr=str(membership),
        team=team,
        before=before,
    )


@transaction.atomic
def membership_ensure(*, actor: Actor, team: Team, user: Any, role: str) -> Membership:
    """For automation (management commands): create or update a membership without a team admin."""
    return _membership_write(actor=actor, team=team, user=user, role=role)


@transaction.atomic
def api_token_create(*, actor: Actor, user: Any, team: Team, name: str) -> tuple[ApiToken, str]:
    """Returns the token row and its plaintext, which is shown once and never stored."""
    if not Membership.objects.filter(user=user, team=team).exists():
        raise ValidationError({"team": "A token can only be made for a team the user belongs to."})
    name = name.strip() or "API token"
    secret = issue_secret(API_TOKEN_KIND)
    token = ApiToken.objects.create(
        user=user, team=team, name=name[:80], prefix=secret.prefix, digest=secret.digest
    )
    audit_record(
        actor=actor,
        action="api_token.create",
        obj=token,
        team=team,
        after=snapshot(token, exclude=["digest"]),
    )
    return token, secret.plaintext


@transaction.atomic
def api_token_revoke(*, actor_user: Any, token_id: int) -> ApiToken:
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=actor_user).first()
    if token is None:
        raise ValidationError({"token": "No such token of yours."})
    if token.revoked_at is not None:
        return token
    before = snapshot(token, exclude=["digest"])
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="api_token.revoke",
        obj=token,
        team=token.team,
        before=before,
        after=snapshot(token, exclude=["digest"]),
    )
    return token
