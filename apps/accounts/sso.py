"""Single sign-on with OpenID Connect, through mozilla-django-oidc (settings: OIDC_*).

The library runs the authorization code flow (state, nonce, PKCE) and checks the ID token's
signature against the provider's JWKS; this backend adds the issuer and audience checks it
leaves out, finds the account by (issuer, subject) and maps the team claim to memberships
(services.sso_sign_in). The views answer 404 while OIDC_ENABLED is off.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from apps.accounts import services
from apps.accounts.choices import ROLE_ORDER

logger = logging.getLogger(__name__)


def team_roles(claims: dict[str, Any]) -> dict[str, str]:
    """{team slug: role} from the groups the team claim names (OIDC_TEAM_MAP); when several
    groups map to one team, the highest role wins."""
    values = claims.get(settings.OIDC_TEAM_CLAIM) if settings.OIDC_TEAM_CLAIM else None
    groups = [values] if isinstance(values, str) else list(values or [])
    roles: dict[str, str] = {}
    for group in groups:
        team, role = settings.OIDC_TEAM_MAP.get(str(group), (None, None))
        if team and ROLE_ORDER.index(role) >= ROLE_ORDER.index(roles.get(team, role)):
            roles[team] = role
    return roles


class SsoBackend(OIDCAuthenticationBackend):
    def authenticate(self, request: HttpRequest | None, **kwargs: Any):
        """A token the checks refuse (signature, expiry, issuer, audience) or an unreachable
        provider is a failed sign-in, which the login page says, not an error page."""
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, jwt.PyJWTError, requests.RequestException) as error:
            logger.warning("single sign-on refused: %s", error)
            return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != settings.OIDC_OP_ISSUER:
            raise SuspiciousOperation("The ID token is from another issuer.")
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The ID token is for another client.")
        if not payload.get("sub"):
            raise SuspiciousOperation("The ID token names no subject.")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload["sub"]:
            raise SuspiciousOperation("The user info is of another subject than the ID token.")
        claims = {**payload, **userinfo}
        user = services.sso_sign_in(
            issuer=payload["iss"],
            subject=payload["sub"],
            claims=claims,
            team_roles=team_roles(claims),
        )
        return user if user.is_active else None


def _enabled(view: Any):
    def guarded(request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        return view(request)

    return guarded


sso_login = _enabled(OIDCAuthenticationRequestView.as_view())
sso_callback = _enabled(OIDCAuthenticationCallbackView.as_view())
