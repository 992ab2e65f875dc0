"""DRF permissions by team role, and the acting team of an API request."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.accounts.choices import Role
from apps.accounts.selectors import membership_for


def request_team(request: Any) -> Any:
    """The team an API call acts for: the token's team, else the session's current team.

    Reading `request.user` first makes DRF authenticate, which is when a token sets the team.
    """
    if not request.user.is_authenticated:
        return None
    return getattr(request, "team", None)


class TeamRolePermission(BasePermission):
    """Reads need membership; writes need `write_role` (engineer unless the view says otherwise)."""

    message = "You are not a member of this team with the role this needs."

    def has_permission(self, request, view) -> bool:
        team = request_team(request)
        membership = membership_for(user=request.user, team=team)
        if membership is None:
            return False
        if request.method in SAFE_METHODS:
            return True
        return membership.has_role(getattr(view, "write_role", Role.ENGINEER))


class StaffWritePermission(BasePermission):
    """Catalog style: every signed-in user reads, only staff (the curators) write."""

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return bool(request.user and request.user.is_staff)
