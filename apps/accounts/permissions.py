"""DRF permissions by team role (the acting team is `apps.core.request_context.request_team`)."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.accounts.choices import Role
from apps.accounts.selectors import membership_for
from apps.core.request_context import request_team


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
