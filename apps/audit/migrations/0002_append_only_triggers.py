"""Make the audit table append-only in the database itself.

PostgreSQL: row triggers refuse UPDATE and DELETE, a statement trigger refuses TRUNCATE. The one
exception is a TRUNCATE in a session that set `stackselect.audit_allow_truncate = 'on'`, which only
the test suite does (its database is emptied between tests); UPDATE and DELETE have no exception.
SQLite (the embedded default): BEFORE UPDATE / DELETE triggers abort the statement.
"""

from django.db import migrations

POSTGRES_UP = [
    """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' AND current_setting('stackselect.audit_allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql""",
    "CREATE TRIGGER audit_refuse_update_delete BEFORE UPDATE OR DELETE ON audit_auditevent "
    "FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()",
    "CREATE TRIGGER audit_refuse_truncate BEFORE TRUNCATE ON audit_auditevent "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change()",
]
POSTGRES_DOWN = [
    "DROP TRIGGER IF EXISTS audit_refuse_update_delete ON audit_auditevent",
    "DROP TRIGGER IF EXISTS audit_refuse_truncate ON audit_auditevent",
    "DROP FUNCTION IF EXISTS audit_refuse_change()",
]
SQLITE_UP = [
    "CREATE TRIGGER audit_refuse_update BEFORE UPDATE ON audit_auditevent "
    "BEGIN SELECT RAISE(ABORT, 'audit_auditevent is append-only: UPDATE refused'); END;",
    "CREATE TRIGGER audit_refuse_delete BEFORE DELETE ON audit_auditevent "
    "BEGIN SELECT RAISE(ABORT, 'audit_auditevent is append-only: DELETE refused'); END;",
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS audit_refuse_update;", "DROP TRIGGER IF EXISTS audit_refuse_delete;"]


def _run(statements_by_vendor):
    def apply(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_UP, "sqlite": SQLITE_UP}),
            _run({"postgresql": POSTGRES_DOWN, "sqlite": SQLITE_DOWN}),
        )
    ]
