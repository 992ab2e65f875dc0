import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record

pytestmark = pytest.mark.django_db


def _record(action: str = "thing.create", **extra) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            actor=Actor.system("test"),
            action=action,
            object_type="test.thing",
            object_id=1,
            **extra,
        )


def test_the_database_refuses_to_update_an_audit_event():
    event = _record()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(message="rewritten")
    event.refresh_from_db()
    assert event.message == ""


def test_the_database_refuses_to_delete_an_audit_event():
    event = _record()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    assert AuditEvent.objects.filter(pk=event.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_audit_record_refuses_to_run_outside_a_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        audit_record(actor=Actor.system(), action="x", object_type="t")


def test_each_event_links_to_the_hash_of_the_one_before():
    first = _record("a.create")
    second = _record("a.update", before={"n": 1}, after={"n": 2})
    assert second.prev_hash == first.hash
    assert len({first.hash, second.hash}) == 2


def test_audit_verify_passes_on_an_untouched_chain(capsys):
    for n in range(3):
        _record(after={"n": n})
    call_command("audit_verify")
    assert "3 events verified" in capsys.readouterr().out


def test_audit_verify_names_a_row_altered_behind_the_triggers_back():
    _record(after={"n": 1})
    tampered = _record(after={"n": 2})
    _record(after={"n": 3})
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # disables the triggers
        cursor.execute(
            "UPDATE audit_auditevent SET after = %s WHERE id = %s", ['{"n": 200}', tampered.pk]
        )
    with pytest.raises(CommandError, match=f"broken at event {tampered.pk}: content"):
        call_command("audit_verify")
