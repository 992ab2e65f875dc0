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


APP_ROLE = "stackselect_app_test"
APP_ROLE_PASSWORD = "app-role-test-only"


@pytest.fixture(scope="session")
def audit_app_role(django_db_setup, django_db_blocker) -> dict[str, str]:
    """A second login role on the test database with the app's production grants (README,
    Production): everything on the other tables, only INSERT and SELECT on the audit table.
    The tests themselves connect as the owner, which may empty the audit table between tests."""
    if connection.vendor != "postgresql":
        pytest.skip("database roles need PostgreSQL")
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.settings_dict["NAME"]
        assert name.startswith("test_"), f"grants only on a test database, not {name}"
        cursor.execute(
            f"DO $$ BEGIN CREATE ROLE {APP_ROLE} LOGIN; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        )
        cursor.execute(f"ALTER ROLE {APP_ROLE} LOGIN PASSWORD %s", [APP_ROLE_PASSWORD])
        for grant in APP_ROLE_GRANTS:
            cursor.execute(grant.format(role=APP_ROLE, database=name))
    settings_dict = connection.settings_dict
    yield {
        "dbname": name,
        "user": APP_ROLE,
        "password": APP_ROLE_PASSWORD,
        "host": settings_dict["HOST"] or "127.0.0.1",
        "port": str(settings_dict["PORT"] or 5432),
    }
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {APP_ROLE}")
        cursor.execute(  # still granted in another test database: that session drops it
            f"DO $$ BEGIN DROP ROLE IF EXISTS {APP_ROLE}; "
            "EXCEPTION WHEN dependent_objects_still_exist THEN NULL; END $$"
        )


# The same statements as README, Production (there for role stackselect_app).
APP_ROLE_GRANTS = (
    'GRANT CONNECT ON DATABASE "{database}" TO {role}',
    "GRANT USAGE ON SCHEMA public TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
    "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
    "REVOKE UPDATE, DELETE, TRUNCATE ON audit_auditevent FROM {role}",
)


@pytest.fixture(autouse=True)
def _audit_checkpoints_per_test(settings, tmp_path):
    """Each test's chain starts empty, so each gets its own checkpoint file."""
    settings.AUDIT_CHECKPOINT_FILE = tmp_path / "audit-checkpoints.jsonl"


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
