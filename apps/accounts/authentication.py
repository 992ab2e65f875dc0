"""`Authorization: Token <token>` for the user API; the token also fixes the acting team."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from apps.accounts.selectors import api_token_authenticate


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode(errors="replace").split()
        if not header or header[0] != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send exactly `Authorization: Token <token>`.")
        token = api_token_authenticate(plaintext=header[1])
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired token.")
        request._request.team = token.team
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword
