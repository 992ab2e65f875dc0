"""The chain check a page runs: only the events after the newest checkpoint are walked."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_chain_first_break
from apps.audit.services import Actor, audit_record
from tests.audit.tampering import as_owner_without_triggers

pytestmark = pytest.mark.django_db


def _chain(length: int) -> list[AuditEvent]:
    events = []
    for n in range(length):
        with transaction.atomic():
            events.append(
                audit_record(
                    actor=Actor.system("test"),
                    action="thing.update",
                    object_type="test.thing",
                    object_id=n,
                    after={"n": n},
                )
            )
    return events


def _alter(event: AuditEvent) -> None:
    as_owner_without_triggers(
        ("UPDATE audit_auditevent SET message = %s WHERE id = %s", ["altered", event.pk])
    )


def _walks(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"] for q in queries.captured_queries if '"audit_auditevent"."prev_hash"' in q["sql"]
    ]


def test_a_page_walks_only_the_events_written_after_the_newest_checkpoint():
    checked = _chain(5)
    call_command("audit_verify")
    _chain(2)

    with CaptureQueriesContext(connection) as queries:
        assert audit_chain_first_break() is None

    [walk] = _walks(queries)
    assert f'"audit_auditevent"."id" > {checked[-1].pk}' in walk


def test_without_a_checkpoint_a_page_walks_the_whole_chain_and_finds_an_altered_event():
    events = _chain(4)
    _alter(events[1])

    broken = audit_chain_first_break()

    assert broken is not None and broken.event_id == events[1].pk


def test_an_event_altered_after_the_checkpoint_is_found():
    _chain(3)
    call_command("audit_verify")
    later = _chain(3)
    _alter(later[1])

    broken = audit_chain_first_break()

    assert broken is not None and broken.event_id == later[1].pk


def test_a_checkpointed_head_that_was_altered_or_an_event_deleted_before_it_is_found():
    events = _chain(4)
    call_command("audit_verify")
    as_owner_without_triggers(("DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk]))

    broken = audit_chain_first_break()

    assert broken is not None and broken.event_id == events[-1].pk
    assert "checkpoint" in broken.reason
