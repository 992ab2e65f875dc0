"""No session setting lets a role truncate the audit table; only its owner may.

0002 let any session that set `stackselect.audit_allow_truncate = 'on'` truncate, the app's
own connection included. Now TRUNCATE passes the trigger only for a member of the table's
owner role: the role migrations run as, which could drop the trigger anyway and which the
checkpoints outside the database (apps/audit/checkpoints.py) hold to account. The app runs as
a role with INSERT and SELECT only (README, Production), so it can neither truncate nor
update, delete or touch the triggers. The test suite connects as the owner and empties its
database between tests. UPDATE and DELETE stay refused to everyone. SQLite has no TRUNCATE.
"""

from django.db import migrations

GUARD_OWNER_ONLY = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' AND pg_has_role(
        current_user,
        (SELECT relowner FROM pg_class WHERE oid = TG_RELID),
        'MEMBER'
    ) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql"""
GUARD_SESSION_SETTING = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' AND current_setting('stackselect.audit_allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql"""


def _replace_guard(body: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(body, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only_triggers")]

    operations = [
        migrations.RunPython(
            _replace_guard(GUARD_OWNER_ONLY), _replace_guard(GUARD_SESSION_SETTING)
        )
    ]
