from django.conf import settings
from django.http import HttpRequest

from apps.core.navigation import navigation


def team_context(request: HttpRequest) -> dict:
    return {
        "current_team": getattr(request, "team", None),
        "current_membership": getattr(request, "membership", None),
        "my_memberships": getattr(request, "memberships", []),
        "navigation": navigation(),
        "sso_login_label": settings.OIDC_LOGIN_LABEL if settings.OIDC_ENABLED else None,
    }
