"""Teams own everything a user creates; memberships carry the role; API tokens and invitation
links are kept as digests."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

from apps.accounts.choices import Role, role_at_least


class Team(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ENGINEER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "team"], name="one_membership_per_team")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} as {self.role}"

    def has_role(self, minimum: str) -> bool:
        return role_at_least(self.role, minimum)


class ApiToken(models.Model):
    """A personal API token for one team. Only the sha256 digest and a readable prefix are kept."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Invitation(models.Model):
    """A one-time link that makes its holder a team member. Only the link's digest is kept.

    Addressed by e-mail, it signs up a new account or is accepted by a signed-in one; addressed
    by username, only that signed-in user can accept it (so it never tells whether they exist).
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(blank=True)
    username = models.CharField(max_length=150, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.team} as {self.role}"

    @property
    def invitee(self) -> str:
        return self.email or self.username

    def problem(self, now: datetime) -> str | None:
        """Why the link can no longer be used, or None while it can."""
        if self.accepted_at is not None:
            return "This invitation has been used already."
        if self.withdrawn_at is not None:
            return "This invitation was withdrawn by a team admin."
        if self.expires_at <= now:
            return f"This invitation expired on {self.expires_at:%Y-%m-%d %H:%M} UTC."
        return None


class SsoIdentity(models.Model):
    """The account an OpenID Connect provider's subject signs in as. Accounts are found by
    (issuer, subject), never by a claimed e-mail address, so a provider cannot take over an
    account made here."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_account_per_subject")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
