"""Sets `request.team` and `request.membership` for pages from the session's chosen team."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from apps.accounts.selectors import memberships_of

SESSION_TEAM_KEY = "team_id"


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = None
        request.membership = None
        if request.user.is_authenticated:
            memberships = list(memberships_of(user=request.user))
            chosen = request.session.get(SESSION_TEAM_KEY)
            current = next((m for m in memberships if m.team_id == chosen), None)
            current = current or (memberships[0] if memberships else None)
            request.memberships = memberships
            if current is not None:
                request.team = current.team
                request.membership = current
        return self.get_response(request)
