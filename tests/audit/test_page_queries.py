"""The audit page costs the same queries for a page of many events as for one."""

from __future__ import annotations

import pytest
from django.db import transaction

from apps.audit.services import Actor, audit_record
from tests.query_budget import page_queries, queries_before_and_after

pytestmark = pytest.mark.django_db


def _events(user, team, count: int) -> None:
    """`count` changes by `user`, each with a before and after so the page draws its diff."""
    with transaction.atomic():
        for n in range(count):
            audit_record(
                actor=Actor.for_user(user),
                action="selection.update",
                object_type="selection",
                object_id=n,
                object_repr=f"goal {n}",
                team=team,
                before={"ttft_ms": n},
                after={"ttft_ms": n + 1},
            )


def test_the_audit_page_reads_as_many_queries_for_many_events_as_for_one(
    alice_client, alice, bob, acme
):
    _events(alice, acme, 1)

    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "audit:events"), lambda: _events(bob, acme, 60)
    )
    assert many == one
