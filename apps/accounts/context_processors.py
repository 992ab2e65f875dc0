from django.http import HttpRequest

from apps.core.navigation import navigation


def team_context(request: HttpRequest) -> dict:
    return {
        "current_team": getattr(request, "team", None),
        "current_membership": getattr(request, "membership", None),
        "my_memberships": getattr(request, "memberships", []),
        "navigation": navigation(),
    }
