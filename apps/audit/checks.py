"""System check: warn when the connected role could rewrite the audit trail.

The triggers stop UPDATE, DELETE and TRUNCATE only for roles that cannot drop them; a role that
owns the table, or holds UPDATE, DELETE or TRUNCATE on it, is one step from erasing history.
Migrations must run as such an owner; the app must not (README, Production). PostgreSQL only.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Warning, register
from django.db import DatabaseError, connection

from apps.audit.models import AuditEvent

_PRIVILEGES = ("UPDATE", "DELETE", "TRUNCATE")


def _powers_over(table: str) -> list[str] | None:
    """What the connected role can do to `table` beyond INSERT and SELECT; None if unknown."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_has_role(current_user, c.relowner, 'MEMBER'), "
            + ", ".join(f"has_table_privilege(c.oid, '{p}')" for p in _PRIVILEGES)
            + " FROM pg_class c WHERE c.oid = to_regclass(%s)",
            [table],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    owns, *granted = row
    return (["owns"] if owns else []) + [
        p for p, has in zip(_PRIVILEGES, granted, strict=True) if has
    ]


@register("database", "audit")
def check_audit_role(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    if connection.vendor != "postgresql":
        return []
    try:
        powers = _powers_over(AuditEvent._meta.db_table)
    except DatabaseError:
        return []  # no database yet (or not reachable): nothing to say about its roles
    if not powers:
        return []
    role = connection.settings_dict.get("USER") or "the connected role"
    return [
        Warning(
            f"The database role {role} can alter the audit trail ({', '.join(powers)} on "
            f"{AuditEvent._meta.db_table}).",
            hint=(
                "Run migrations as the owner role and the app as a role granted only INSERT and "
                "SELECT on the audit table (README, Production). Expected while migrating."
            ),
            id="audit.W001",
        )
    ]
