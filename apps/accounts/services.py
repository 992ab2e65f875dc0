"""Writes for teams, memberships, invitations and API tokens; each one transaction with its audit
event."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.choices import Role
from apps.accounts.models import ApiToken, Invitation, Membership, SsoIdentity, Team
from apps.accounts.secrets import issue_secret
from apps.accounts.selectors import API_TOKEN_KIND, INVITATION_KIND, invitation_for_link
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot

INVALID_LINK = "This invitation link is not valid; check that it was copied whole."


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


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ValidationError(
            {"role": f"{role!r} is not a role; use one of {', '.join(Role.values)}."}
        )


def _membership_write(*, actor: Actor, team: Team, user: Any, role: str) -> Membership:
    _check_role(role)
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
def membership_role_set(
    *, actor_user: Any, team: Team, membership_id: int, role: str
) -> Membership:
    """A team admin changes a member's role; the team always keeps one admin."""
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    membership = _locked_membership(team, membership_id)
    if membership.role == Role.ADMIN and role != Role.ADMIN and _admin_count(team) == 1:
        raise ValidationError({"role": "The team's last admin cannot give up the admin role."})
    return _membership_write(
        actor=Actor.for_user(actor_user), team=team, user=membership.user, role=role
    )


def _locked_membership(team: Team, membership_id: int) -> Membership:
    """The member's row, after locking the team's so that admin counts cannot race."""
    Team.objects.select_for_update().filter(pk=team.pk).first()
    membership = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(pk=membership_id, team=team)
        .first()
    )
    if membership is None:
        raise ValidationError({"membership": "That member is not in this team."})
    return membership


def _admin_count(team: Team) -> int:
    return Membership.objects.filter(team=team, role=Role.ADMIN).count()


@transaction.atomic
def membership_remove(*, actor_user: Any, team: Team, membership_id: int) -> None:
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    membership = _locked_membership(team, membership_id)
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


@transaction.atomic
def invitation_create(
    *, actor_user: Any, team: Team, invitee: str, role: str
) -> tuple[Invitation, str]:
    """A team admin invites an e-mail address or a username with a role.

    Returns the invitation and the link's secret, shown once and never stored. Whether a
    username exists is never checked, so the answer is the same either way.
    """
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    _check_role(role)
    address = _invitee_fields(invitee.strip())
    username = address.get("username")
    if username and Membership.objects.filter(team=team, user__username=username).exists():
        raise ValidationError({"invitee": f"{username} is a member of the team already."})
    secret = issue_secret(INVITATION_KIND)
    invitation = Invitation.objects.create(
        team=team,
        role=role,
        prefix=secret.prefix,
        digest=secret.digest,
        invited_by=actor_user,
        expires_at=timezone.now() + timedelta(seconds=settings.INVITATION_TTL_S),
        **address,
    )
    audit_record(
        actor=Actor.for_user(actor_user),
        action="invitation.create",
        obj=invitation,
        team=team,
        after=snapshot(invitation, exclude=["digest"]),
    )
    return invitation, secret.plaintext


def _invitee_fields(invitee: str) -> dict[str, str]:
    """`email` for anything with an @, else `username`; each checked for its shape only."""
    if not invitee:
        raise ValidationError({"invitee": "Enter an e-mail address or a username."})
    try:
        if "@" in invitee:
            validate_email(invitee)
            return {"email": invitee}
        UnicodeUsernameValidator()(invitee)
    except ValidationError as error:
        raise ValidationError(
            {"invitee": "Enter an e-mail address, or a username of letters, digits and @.+-_."}
        ) from error
    return {"username": invitee}


@transaction.atomic
def invitation_withdraw(*, actor_user: Any, team: Team, invitation_id: int) -> Invitation:
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    invitation = Invitation.objects.select_for_update().filter(pk=invitation_id, team=team).first()
    if invitation is None:
        raise ValidationError({"invitation": "That invitation is not of this team."})
    problem = invitation.problem(timezone.now())
    if problem:
        raise ValidationError({"invitation": problem})
    before = snapshot(invitation, exclude=["digest"])
    invitation.withdrawn_at = timezone.now()
    invitation.save(update_fields=["withdrawn_at"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="invitation.withdraw",
        obj=invitation,
        team=team,
        before=before,
        after=snapshot(invitation, exclude=["digest"]),
    )
    return invitation


@transaction.atomic
def invitation_accept(*, user: Any, plaintext: str) -> Membership:
    """A signed-in user takes up the invitation of this link and joins its team."""
    invitation = _usable_invitation(plaintext)
    if invitation.username and invitation.username != user.get_username():
        raise ValidationError(
            "This invitation is for another account: log in as the invited user to accept it."
        )
    if Membership.objects.filter(team=invitation.team, user=user).exists():
        raise ValidationError(f"You are a member of {invitation.team} already.")
    return _take_up(invitation, user)


@transaction.atomic
def invitation_sign_up(*, plaintext: str, username: str, password: str) -> Membership:
    """A new person makes an account from an e-mail invitation and joins its team."""
    invitation = _usable_invitation(plaintext)
    if invitation.username:
        raise ValidationError("This invitation is for an existing account: log in to accept it.")
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(
                username, email=invitation.email, password=password
            )
    except IntegrityError as error:
        raise ValidationError({"username": "That username is taken; choose another."}) from error
    audit_record(
        actor=Actor.for_user(user),
        action="user.create",
        obj=user,
        team=invitation.team,
        after={"username": username, "email": invitation.email},
        message=f"signed up through an invitation to {invitation.team}",
    )
    return _take_up(invitation, user)


def _usable_invitation(plaintext: str) -> Invitation:
    found = invitation_for_link(plaintext=plaintext)
    invitation = None if found is None else Invitation.objects.select_for_update().get(pk=found.pk)
    if invitation is None:
        raise ValidationError(INVALID_LINK)
    problem = invitation.problem(timezone.now())
    if problem:
        raise ValidationError(problem)
    return invitation


def _take_up(invitation: Invitation, user: Any) -> Membership:
    before = snapshot(invitation, exclude=["digest"])
    membership = _membership_write(
        actor=Actor.for_user(user), team=invitation.team, user=user, role=invitation.role
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(
        actor=Actor.for_user(user),
        action="invitation.accept",
        obj=invitation,
        team=invitation.team,
        before=before,
        after=snapshot(invitation, exclude=["digest"]),
    )
    return membership


@transaction.atomic
def sso_sign_in(
    *, issuer: str, subject: str, claims: dict[str, Any], team_roles: dict[str, str]
) -> Any:
    """The account of an OpenID Connect subject, made on its first sign-in, and the
    memberships the provider's claim maps it to ({team slug: role}; a team that does not exist
    here is skipped). A mapping adds or changes a role, never removes a membership: removing
    stays with the team admins. With no mapping the account waits for an admin's invitation.
    """
    user = _sso_user(issuer, subject, claims)
    teams = {team.slug: team for team in Team.objects.filter(slug__in=list(team_roles))}
    for slug, role in sorted(team_roles.items()):
        team = teams.get(slug)
        current = Membership.objects.filter(team=team, user=user).first() if team else None
        if team is not None and (current is None or current.role != role):
            _membership_write(actor=Actor.system("sso"), team=team, user=user, role=role)
    return user


def _sso_user(issuer: str, subject: str, claims: dict[str, Any], attempts: int = 3) -> Any:
    """The subject's account, made on its first sign-in.

    Two first sign-ins at once (two tabs coming back from the provider) both find no account;
    the second one's insert waits for the first to commit and fails on the unique (issuer,
    subject) or username, so it reads the first's account. A username taken meanwhile by
    another new account is tried again, when the taken name is visible and gets a number.
    """
    identities = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject)
    tried = 0
    while True:
        identity = identities.first()
        if identity is not None:
            return identity.user
        tried += 1
        try:
            with transaction.atomic():  # a savepoint: the outer transaction survives a conflict
                return _sso_account(issuer, subject, claims)
        except IntegrityError:
            if tried >= attempts:
                raise


def _sso_account(issuer: str, subject: str, claims: dict[str, Any]) -> Any:
    """A new account with no password (it signs in through the provider only), named after
    the provider's preferred username or e-mail, with a number when the name is taken."""
    users = get_user_model().objects
    wanted = str(claims.get("preferred_username") or claims.get("email") or subject)
    base = re.sub(r"[^\w.@+-]", "-", wanted)[:140] or "sso-user"
    username, number = base, 1
    while users.filter(username__iexact=username).exists():
        number += 1
        username = f"{base}-{number}"
    user = users.create_user(username, email=str(claims.get("email") or ""))
    user.set_unusable_password()
    user.save(update_fields=["password"])
    SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    audit_record(
        actor=Actor.for_user(user),
        action="user.create",
        obj=user,
        after={"username": username, "email": user.email, "issuer": issuer, "subject": subject},
        message="first sign-in with single sign-on",
    )
    return user
