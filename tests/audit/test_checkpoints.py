"""The chain against checkpoints kept outside the database: what its owner can no longer hide."""

from __future__ import annotations

import json
import logging

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from apps.audit.checkpoints import read_checkpoints
from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record
from apps.audit.tasks import CHECKPOINT_TASK, checkpoint_chain
from tests.audit.tampering import as_owner_without_triggers, rewrite_and_rehash

pytestmark = pytest.mark.django_db


def _record(n: int) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            actor=Actor.system("test"),
            action="thing.update",
            object_type="test.thing",
            object_id=n,
            after={"n": n},
        )


def _chain(length: int) -> list[AuditEvent]:
    return [_record(n) for n in range(length)]


def _checkpoints() -> list[dict]:
    path = settings.AUDIT_CHECKPOINT_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _verify_fails(match: str) -> None:
    lines_before = len(_checkpoints())
    with pytest.raises(CommandError, match=match):
        call_command("audit_verify")
    assert len(_checkpoints()) == lines_before, "a broken chain must not be checkpointed"


def test_audit_verify_appends_a_checkpoint_of_the_head_it_verified(capsys):
    events = _chain(3)
    call_command("audit_verify")
    assert "no earlier checkpoint" in capsys.readouterr().out
    [line] = _checkpoints()
    assert line["first_id"] == events[0].pk and line["last_id"] == events[-1].pk
    assert line["count"] == 3 and line["head_hash"] == events[-1].hash and line["at"]
    call_command("audit_verify")
    assert f"matches the checkpoint of {line['at']} (event {events[-1].pk})" in (
        capsys.readouterr().out
    )
    assert len(_checkpoints()) == 2


def test_events_appended_after_a_checkpoint_and_ids_lost_to_rollbacks_still_verify(capsys):
    _chain(2)
    call_command("audit_verify")
    with pytest.raises(RuntimeError), transaction.atomic():
        audit_record(actor=Actor.system(), action="x.y", object_type="test.thing")
        raise RuntimeError("rolled back: its id is never used")
    later = _chain(2)
    call_command("audit_verify")
    assert "4 events verified" in capsys.readouterr().out
    assert _checkpoints()[-1]["last_id"] == later[-1].pk


def test_the_beat_task_checkpoints_the_chain_on_a_schedule():
    events = _chain(2)
    entry = settings.CELERY_BEAT_SCHEDULE["audit.checkpoint"]
    assert entry["task"] == CHECKPOINT_TASK
    assert entry["schedule"] == settings.AUDIT_CHECKPOINT_INTERVAL_S
    assert checkpoint_chain.apply().get() == events[-1].pk
    assert _checkpoints()[-1]["head_hash"] == events[-1].hash


def test_the_beat_task_logs_a_broken_chain_and_does_not_checkpoint_it(caplog):
    events = _chain(3)
    checkpoint_chain.apply()
    as_owner_without_triggers(("DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk]))
    with caplog.at_level(logging.ERROR, logger="apps.audit.tasks"):
        assert checkpoint_chain.apply().get() is None
    assert f"audit chain broken at event {events[1].pk}" in caplog.text
    assert len(_checkpoints()) == 1


def test_truncation_by_the_owner_is_detected_against_the_checkpoint():
    events = _chain(4)
    call_command("audit_verify")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE audit_auditevent")  # the owner may; the app role may not
    assert not AuditEvent.objects.exists()
    _verify_fails(
        rf"broken at event {events[0].pk}: event {events[0].pk} is missing \(the "
        r"checkpoint of .* recorded 4 events up to event \d+, 0 remain\)"
    )


def test_deleting_the_last_events_is_detected_naming_the_first_deleted():
    events = _chain(5)
    call_command("audit_verify")
    as_owner_without_triggers(("DELETE FROM audit_auditevent WHERE id >= %s", [events[3].pk]))
    _verify_fails(rf"broken at event {events[3].pk}: event {events[3].pk} is missing")


@pytest.mark.parametrize("checkpointed", [True, False])
def test_deleting_an_event_in_the_middle_names_that_event_not_the_next(checkpointed):
    events = _chain(5)
    if checkpointed:
        call_command("audit_verify")
    as_owner_without_triggers(("DELETE FROM audit_auditevent WHERE id = %s", [events[2].pk]))
    _verify_fails(rf"broken at event {events[2].pk}: event {events[2].pk} is missing")


def test_deleting_the_first_event_names_it_from_the_checkpoint():
    events = _chain(3)
    call_command("audit_verify")
    as_owner_without_triggers(("DELETE FROM audit_auditevent WHERE id = %s", [events[0].pk]))
    _verify_fails(rf"broken at event {events[0].pk}: event {events[0].pk} is missing")


def test_renumbering_the_checkpointed_head_is_detected_and_says_where_it_went():
    events = _chain(3)
    call_command("audit_verify")
    moved = events[-1].pk + 1000
    as_owner_without_triggers(
        ("UPDATE audit_auditevent SET id = %s WHERE id = %s", [moved, events[-1].pk])
    )
    _verify_fails(
        rf"broken at event {events[-1].pk}: event {events[-1].pk} is missing .*now at event "
        rf"{moved}: ids were renumbered"
    )


def test_renumbering_every_id_is_detected_against_the_checkpoint():
    events = _chain(3)
    call_command("audit_verify")
    as_owner_without_triggers(("UPDATE audit_auditevent SET id = id + 1000", []))
    _verify_fails(
        rf"broken at event {events[0].pk}: event {events[0].pk} is missing .*; event "
        rf"{events[-1].pk} is now at event {events[-1].pk + 1000}: ids were renumbered"
    )


def test_moving_an_event_out_of_the_middle_names_it_and_its_new_id():
    events = _chain(4)
    moved = events[-1].pk + 1000
    as_owner_without_triggers(
        ("UPDATE audit_auditevent SET id = %s WHERE id = %s", [moved, events[1].pk])
    )
    _verify_fails(
        rf"broken at event {events[1].pk}: event {events[1].pk} is missing.*; event "
        rf"{events[1].pk} is now at event {moved}: ids were renumbered"
    )


def test_a_rewrite_with_recomputed_hashes_is_named_at_the_event_it_began_with():
    events = _chain(4)
    call_command("audit_verify")
    rewrite_and_rehash(events[1].pk, "nothing happened here")
    _verify_fails(
        rf"broken at event {events[1].pk}: its hash differs from the one a checkpoint recorded "
        "for it: the event was rewritten"
    )


def test_a_rewrite_after_an_earlier_checkpoint_is_named_from_the_later_ones_record():
    events = _chain(2)
    call_command("audit_verify")
    events += _chain(3)
    call_command("audit_verify")
    rewrite_and_rehash(events[3].pk, "nothing happened here")
    _verify_fails(rf"broken at event {events[3].pk}: its hash differs")


def test_a_checkpoint_without_event_hashes_still_catches_a_rewrite_at_its_head():
    """Lines written before checkpoints recorded each event's hash pin only the head."""
    events = _chain(4)
    call_command("audit_verify")
    path = settings.AUDIT_CHECKPOINT_FILE
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**line, "hashes": []}) + "\n" for line in lines))
    rewrite_and_rehash(events[1].pk, "nothing happened here")
    _verify_fails(
        rf"broken at event {events[-1].pk}: does not match the checkpoint .* rewritten from the "
        "start up to this event"
    )


def test_each_checkpoint_records_only_the_events_no_earlier_one_recorded():
    first = _chain(2)
    call_command("audit_verify")
    second = _chain(3)
    call_command("audit_verify")
    older, newer = read_checkpoints()
    assert [event_id for event_id, _ in older.hashes] == [event.pk for event in first]
    assert [event_id for event_id, _ in newer.hashes] == [event.pk for event in second]
    assert newer.hashes[-1][1] == newer.head_hash


def test_an_unreadable_checkpoint_file_is_an_error_not_an_empty_history():
    _chain(1)
    settings.AUDIT_CHECKPOINT_FILE.write_text('{"last_id": 1}\n')
    with pytest.raises(
        CommandError, match=r"checkpoints unreadable: .* line 1 is not a checkpoint"
    ):
        call_command("audit_verify")
