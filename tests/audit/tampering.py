"""What an owner of the audit table can do behind the triggers' back, for the tests to detect."""

from __future__ import annotations

from django.db import connection, transaction

from apps.audit.chain import event_hash
from apps.audit.selectors import chain_rows


def as_owner_without_triggers(*statements: tuple[str, list]) -> None:
    """Run SQL with the append-only triggers disabled, as only the table's owner can."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE waits for no deferred check
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        for sql, params in statements:
            cursor.execute(sql, params)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def rewrite_and_rehash(event_id: int, message: str) -> None:
    """Change one event's message and recompute its hash and every hash after it."""
    updates: list[tuple[str, list]] = []
    prev = None
    for row_id, prev_hash, _stored, fields in chain_rows():
        if row_id < event_id:
            continue
        prev = prev_hash if prev is None else prev
        if row_id == event_id:
            fields = {**fields, "message": message}
        digest = event_hash(prev, fields)
        updates.append(
            (
                "UPDATE audit_auditevent SET message = %s, prev_hash = %s, hash = %s WHERE id = %s",
                [fields["message"], prev, digest, row_id],
            )
        )
        prev = digest
    as_owner_without_triggers(*updates)
