"""Shared fixtures: the fixed personas and the database set-up every test relies on.

alice (team admin) and bob (engineer) are in team Acme; charlie is the admin of team Globex,
the outsider every team-owned endpoint is tested against.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client

from apps.accounts.choices import Role
from apps.accounts.models import Membership, Team

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Let the test database be emptied between tests despite the audit table's TRUNCATE guard."""
    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                name = connection.settings_dict["NAME"]
                cursor.execute(
                    f"ALTER DATABASE \"{name}\" SET stackselect.audit_allow_truncate = 'on'"
                )
            connection.close()


@pytest.fixture(scope="session", autouse=True)
def collected_static(tmp_path_factory):
    """Production storage (hashed names) needs collected files, as `make run` does."""
    call_command("collectstatic", interactive=False, verbosity=0)


@pytest.fixture(autouse=True)
def _no_api_throttling(settings):
    """The tests call the API far faster than any client should; the throttling tests
    (tests/core/test_throttling.py) turn it back on. Login throttling stays on: its failure
    counts live in the test database, so no test inherits another's."""
    settings.API_THROTTLE_ENABLED = False


def _user(username: str, **extra):
    return get_user_model().objects.create_user(username, password=PASSWORD, **extra)


@pytest.fixture
def acme(db) -> Team:
    return Team.objects.create(slug="acme", name="Acme")


@pytest.fixture
def globex(db) -> Team:
    return Team.objects.create(slug="globex", name="Globex")


@pytest.fixture
def alice(acme):
    user = _user("alice")
    Membership.objects.create(user=user, team=acme, role=Role.ADMIN)
    return user


@pytest.fixture
def bob(acme):
    user = _user("bob")
    Membership.objects.create(user=user, team=acme, role=Role.ENGINEER)
    return user


@pytest.fixture
def charlie(globex):
    user = _user("charlie")
    Membership.objects.create(user=user, team=globex, role=Role.ADMIN)
    return user


@pytest.fixture
def curator(db):
    return _user("curator", is_staff=True)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice) -> Client:
    return logged_in(alice)


@pytest.fixture
def bob_client(bob) -> Client:
    return logged_in(bob)


@pytest.fixture
def charlie_client(charlie) -> Client:
    return logged_in(charlie)
