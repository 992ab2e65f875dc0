"""Secret tokens with a readable prefix, stored as sha256 digests (API and runner tokens)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

PREFIX_LENGTH = 8


@dataclass(frozen=True)
class IssuedSecret:
    plaintext: str  # shown once, never stored
    prefix: str
    digest: str


def digest_of(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def issue_secret(kind: str) -> IssuedSecret:
    """Make `<kind>_<prefix>_<secret>`; the prefix finds the row, the digest proves the secret."""
    prefix = secrets.token_hex(PREFIX_LENGTH // 2)
    plaintext = f"{kind}_{prefix}_{secrets.token_urlsafe(32)}"
    return IssuedSecret(plaintext=plaintext, prefix=prefix, digest=digest_of(plaintext))


def split_prefix(plaintext: str, kind: str) -> str | None:
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != kind or len(parts[1]) != PREFIX_LENGTH:
        return None
    return parts[1]


def matches(plaintext: str, digest: str) -> bool:
    return hmac.compare_digest(digest_of(plaintext), digest)
