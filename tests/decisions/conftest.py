"""Fixtures of the decisions tests: the catalog, Acme's selection, bob as an approver, and
Celery tasks sent by name run in-process."""

from __future__ import annotations

import pytest

from config.celery import app as celery_app
from tests.decisions.factories import decision_catalog, make_approver, two_candidate_selection


@pytest.fixture
def rows(db):
    return decision_catalog()


@pytest.fixture
def selection(acme, alice, rows):
    return two_candidate_selection(acme, alice, rows)


@pytest.fixture
def approver_bob(bob, acme):
    return make_approver(bob, acme)


@pytest.fixture
def sent_tasks(monkeypatch):
    """Run every task sent by name at once, in this process, and remember what was sent."""
    sent: list[tuple[str, dict]] = []

    def run_now(name: str, kwargs: dict | None = None, **options):
        sent.append((name, kwargs or {}))
        celery_app.tasks[name](**(kwargs or {}))

    monkeypatch.setattr(celery_app, "send_task", run_now)
    return sent
