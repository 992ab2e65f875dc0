"""The audit page offers the team's own actions and object types as choices and dates as date
pickers; the API keeps exact-match strings."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from unittest import mock

import pytest
from django.db import transaction

from apps.audit.services import Actor, audit_record

pytestmark = pytest.mark.django_db


def _event(user, team, action: str, object_type: str, when: datetime | None = None) -> None:
    with transaction.atomic(), _clock_at(when):
        audit_record(
            actor=Actor.for_user(user),
            action=action,
            object_type=object_type,
            object_id=1,
            object_repr=action,
            team=team,
        )


@contextmanager
def _clock_at(when: datetime | None) -> Iterator[None]:
    """Events are append-only, so an old event is written while the clock reads its time."""
    if when is None:
        yield
        return
    with mock.patch("apps.audit.services.timezone.now", return_value=when):
        yield


def test_the_choices_are_the_teams_own_actions_and_object_types(
    alice_client, alice, acme, charlie, globex
):
    _event(alice, acme, "decision.accept", "decisions.decisionrecord")
    _event(alice, acme, "membership.create", "accounts.membership")
    _event(charlie, globex, "runner.enroll", "runners.runner")
    form = alice_client.get("/audit/").context["filter"].form
    actions = [value for value, _ in form.fields["action"].widget.choices]
    types = dict(form.fields["object_type"].widget.choices)
    assert actions == ["", "decision.accept", "membership.create"]
    assert types == {
        "": "any object",
        "accounts.membership": "Membership",
        "decisions.decisionrecord": "Decision record",
    }
    page = alice_client.get("/audit/").content.decode()
    assert 'type="date"' in page and "runner.enroll" not in page


def test_choosing_an_action_and_a_date_range_filters_the_events(alice_client, alice, acme):
    march, may = datetime(2026, 3, 2, 10, tzinfo=UTC), datetime(2026, 5, 2, 10, tzinfo=UTC)
    _event(alice, acme, "decision.accept", "decisions.decisionrecord", when=march)
    _event(alice, acme, "decision.accept", "decisions.decisionrecord", when=may)
    _event(alice, acme, "membership.create", "accounts.membership", when=march)
    query = {"action": "decision.accept", "occurred_after": "2026-03-01"}
    rows = alice_client.get("/audit/", {**query, "occurred_before": "2026-03-31"}).context["rows"]
    found = [(event.action, event.occurred_at.month) for event, _ in rows]
    assert found == [("decision.accept", 3)]


def test_the_api_still_takes_any_action_string(alice_client, alice, acme):
    _event(alice, acme, "decision.accept", "decisions.decisionrecord")
    answer = alice_client.get("/api/v1/audit/events/", {"action": "no.such.action"})
    assert answer.status_code == 200 and answer.json()["count"] == 0
