"""`Authorization: Runner <credential>` for the runner API; a revoked or rotated one gets 401."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission

from apps.runners.models import Runner
from apps.runners.selectors import runner_authenticate


@dataclass(frozen=True)
class RunnerPrincipal:
    """Stands in for request.user: a runner is authenticated but is no person."""

    runner: Runner
    is_authenticated: bool = True
    is_staff: bool = False
    is_active: bool = True

    def get_username(self) -> str:
        return f"runner:{self.runner.name}"


class RunnerAuthentication(authentication.BaseAuthentication):
    keyword = "Runner"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode(errors="replace").split()
        if not header or header[0] != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Send exactly `Authorization: Runner <credential>`."
            )
        runner = runner_authenticate(plaintext=header[1])
        if runner is None:
            raise exceptions.AuthenticationFailed("Unknown, rotated or revoked runner credential.")
        return RunnerPrincipal(runner), runner

    def authenticate_header(self, request) -> str:
        return self.keyword


class IsRunner(BasePermission):
    message = "This endpoint needs `Authorization: Runner <credential>`."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Runner)
