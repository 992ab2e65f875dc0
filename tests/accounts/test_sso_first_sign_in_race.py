"""Two first sign-ins of one subject at once (two tabs back from the provider) end in one
account, not an error: the second waits for the first's insert, then reads its account."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction

from apps.accounts.models import SsoIdentity
from apps.accounts.services import sso_sign_in

pytestmark = pytest.mark.django_db(transaction=True)

ISSUER, SUBJECT = "https://id.example.com", "subject-1"
CLAIMS = {"preferred_username": "dana", "email": "dana@example.com"}


def _sign_in() -> Any:
    return sso_sign_in(issuer=ISSUER, subject=SUBJECT, claims=CLAIMS, team_roles={})


def _waiting_on_a_lock(timeout_s: float = 10.0) -> bool:
    """Whether another session of this database waits on a row lock (the second insert)."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.05)
    return False


def test_a_second_first_sign_in_waiting_on_the_first_gets_the_same_account():
    signed_in, commit = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                results["first"] = _sign_in()
                signed_in.set()
                commit.wait(timeout=20)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            results["second"] = _sign_in()
        except Exception as error:  # the failure this test is about
            results["second"] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert signed_in.wait(timeout=20)
    threads[1].start()
    assert _waiting_on_a_lock(), "the second sign-in should wait on the first one's insert"
    commit.set()
    for thread in threads:
        thread.join(timeout=20)

    assert not isinstance(results["second"], Exception), results["second"]
    assert results["second"].pk == results["first"].pk
    assert get_user_model().objects.filter(username__startswith="dana").count() == 1
    assert SsoIdentity.objects.filter(issuer=ISSUER, subject=SUBJECT).count() == 1
