"""System checks: warn when the connected role could rewrite the audit trail, or when the
table's append-only triggers are off.

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
_GUARDS = ("audit_refuse_update_delete", "audit_refuse_truncate")  # migration 0002


def _table_state(table: str) -> tuple[list[str], int] | None:
    """What the connected role can do to `table` beyond INSERT and SELECT, and how many of the
    append-only triggers are enabled; None when there is no such table yet."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_has_role(current_user, c.relowner, 'MEMBER'), "
            + ", ".join(f"has_table_privilege(c.oid, '{p}')" for p in _PRIVILEGES)
            + ", (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid"
            " AND t.tgname = ANY(%s) AND t.tgenabled <> 'D')"
            " FROM pg_class c WHERE c.oid = to_regclass(%s)",
            [list(_GUARDS), table],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    owns, *granted, guards = row
    powers = (["owns"] if owns else []) + [
        p for p, has in zip(_PRIVILEGES, granted, strict=True) if has
    ]
    return powers, guards


@register("database", "audit")
def check_audit_table(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    if connection.vendor != "postgresql":
        return []
    table = AuditEvent._meta.db_table
    try:
        state = _table_state(table)
    except DatabaseError:
        return []  # no database yet (or not reachable): nothing to say about its roles
    if state is None:
        return []
    powers, guards = state
    warnings = []
    if powers:
        role = connection.settings_dict.get("USER") or "the connected role"
        warnings.append(
            Warning(
                f"The database role {role} can alter the audit trail ({', '.join(powers)} on "
                f"{table}).",
                hint=(
                    "Run migrations as the owner role and the app as a role granted only INSERT "
                    "and SELECT on the audit table (README, Production). Expected while migrating."
                ),
                id="audit.W001",
            )
        )
    if guards < len(_GUARDS):
        warnings.append(
            Warning(
                f"The append-only triggers of {table} are disabled or missing "
                f"({guards} of {len(_GUARDS)} enabled).",
                hint=(
                    f"As the owner: ALTER TABLE {table} ENABLE TRIGGER USER, then run "
                    "manage.py audit_verify to check nothing was changed meanwhile."
                ),
                id="audit.W002",
            )
        )
    return warnings
