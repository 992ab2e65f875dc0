"""Environment helpers that fail loudly.

A mistyped value in production must stop start-up with a message that names the variable,
never fall back silently to a default. Every helper also reads ``NAME_FILE`` (a path holding
the value), so secrets can come from mounted files.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = _raw(name)
    if value is None or value == "":
        if required:
            raise ImproperlyConfigured(
                f"{name} must be set (see the configuration table in README.md)"
            )
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off"
    )


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = (_raw(name) or default).strip()
    normalised = value.upper() if default.isupper() else value.lower()
    if normalised not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return normalised


def parse_team_map(name: str, value: str | None) -> dict[str, tuple[str, str]]:
    """`group=team-slug:role,...` as {group: (team slug, role)}; a malformed entry or an unknown
    role stops start-up naming the variable."""
    from apps.accounts.choices import ROLE_ORDER as roles

    mapping: dict[str, tuple[str, str]] = {}
    for entry in filter(None, (part.strip() for part in (value or "").split(","))):
        group, _, target = entry.partition("=")
        team, _, role = target.partition(":")
        if not (group.strip() and team.strip() and role.strip() in roles):
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is not group=team-slug:role with a role of {', '.join(roles)}"
            )
        mapping[group.strip()] = (team.strip(), role.strip())
    return mapping
