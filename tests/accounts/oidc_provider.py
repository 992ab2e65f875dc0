"""A small OpenID Connect provider on a real HTTP port, the test peer single sign-on talks to.

It is not our code under test but the other side of the protocol: discovery, a JWKS with one
RSA key, an authorize endpoint that signs in whoever the test says is at the keyboard, a token
endpoint that checks the client, the code, its redirect URI and the PKCE verifier and returns
an RS256-signed ID token, and a user-info endpoint. `token_overrides` lets a test send a token
the client must refuse (another audience, another issuer).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from config.env import parse_team_map

CLIENT_ID = "stackselect-test"
CLIENT_SECRET = "stand-in-client-secret"


class StandInProvider:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(4)
        self.person: dict[str, Any] = {}
        self.token_overrides: dict[str, Any] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandInProvider:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def signs_in(self, **claims: Any) -> None:
        """Who is at the provider's keyboard for the next authorization (sub, email, ...)."""
        self.person = claims

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict[str, str]) -> str:
        """The redirect back to the client with a one-time code."""
        if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
            raise ValueError("unknown client or response type")
        code = secrets.token_urlsafe(16)
        self.codes[code] = {**query, "claims": dict(self.person)}
        answer = {"code": code, "state": query["state"]}
        return f"{query['redirect_uri']}?{urlencode(answer)}"

    def token(self, form: dict[str, str]) -> dict[str, Any]:
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or form.get("client_id") != CLIENT_ID:
            raise ValueError("invalid_grant")
        if form.get("client_secret") != CLIENT_SECRET:
            raise ValueError("invalid_client")
        if form.get("redirect_uri") != grant["redirect_uri"]:
            raise ValueError("redirect_uri differs from the authorization's")
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if challenge.decode() != grant.get("code_challenge"):
            raise ValueError("PKCE verifier does not match")
        now = int(time.time())
        claims = grant["claims"]
        body = {"iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300, **claims}
        body |= {"nonce": grant.get("nonce")} | self.token_overrides
        id_token = jwt.encode(body, self.key, algorithm="RS256", headers={"kid": self.kid})
        access_token = secrets.token_urlsafe(16)
        self.access[access_token] = claims
        return {"access_token": access_token, "token_type": "Bearer", "id_token": id_token}


def configure_sso(settings: Any, provider: StandInProvider) -> StandInProvider:
    """The settings an operator writes from the provider's discovery document; group
    ml-approvers makes a person an approver in Acme."""
    found = requests.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=5).json()
    settings.OIDC_ENABLED = True
    settings.OIDC_OP_ISSUER = found["issuer"]
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = found["authorization_endpoint"]
    settings.OIDC_OP_TOKEN_ENDPOINT = found["token_endpoint"]
    settings.OIDC_OP_USER_ENDPOINT = found["userinfo_endpoint"]
    settings.OIDC_OP_JWKS_ENDPOINT = found["jwks_uri"]
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_TEAM_CLAIM = "groups"
    settings.OIDC_TEAM_MAP = parse_team_map("OIDC_TEAM_MAP", "ml-approvers=acme:approver")
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "apps.accounts.sso.SsoBackend",
    ]
    return provider


def _handler(provider: StandInProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                return self._json(200, provider.discovery())
            if url.path == "/jwks":
                return self._json(200, provider.jwks())
            if url.path == "/userinfo":
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                claims = provider.access.get(token)
                return self._json(200, claims) if claims else self._json(401, {})
            if url.path == "/authorize":
                try:
                    location = provider.authorize(query)
                except (KeyError, ValueError) as error:
                    return self._json(400, {"error": str(error)})
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._json(404, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if urlsplit(self.path).path != "/token":
                return self._json(404, {})
            try:
                return self._json(200, provider.token(form))
            except ValueError as error:
                return self._json(400, {"error": str(error)})

    return Handler
