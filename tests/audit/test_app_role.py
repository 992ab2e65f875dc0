"""The app's own role (INSERT and SELECT on the audit table, README Production) cannot erase or
rewrite history, whatever it sets in its session; the role check tells the two roles apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection, transaction

from apps.audit.checks import check_audit_table
from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record
from apps.audit.tasks import CHECKPOINT_TASK
from config.celery import app as celery_app
from tests.conftest import APP_ROLE

pytestmark = pytest.mark.django_db(transaction=True)  # the app role sees only committed rows
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def event(audit_app_role) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=Actor.system("test"), action="thing.create", object_type="t")


def _as_app_role(audit_app_role, *statements: str) -> None:
    with psycopg.connect(**audit_app_role) as app, app.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "TRUNCATE audit_auditevent",
        "UPDATE audit_auditevent SET message = 'rewritten'",
        "DELETE FROM audit_auditevent",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER USER",
        "DROP TRIGGER audit_refuse_truncate ON audit_auditevent",
    ],
)
def test_the_app_role_cannot_erase_rewrite_or_unguard_the_audit_table(
    audit_app_role, event, statement
):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _as_app_role(audit_app_role, statement)
    event.refresh_from_db()
    assert event.message == "" and AuditEvent.objects.count() == 1


def test_no_session_setting_lets_a_role_that_is_not_the_owner_truncate(audit_app_role, event):
    """Even granted TRUNCATE by mistake, the app role is stopped by the trigger."""
    with connection.cursor() as cursor:
        cursor.execute(f"GRANT TRUNCATE ON audit_auditevent TO {APP_ROLE}")
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            _as_app_role(
                audit_app_role,
                "SET stackselect.audit_allow_truncate = 'on'",
                "TRUNCATE audit_auditevent",
            )
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"REVOKE TRUNCATE ON audit_auditevent FROM {APP_ROLE}")
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_the_app_role_can_still_append_to_and_read_the_chain(audit_app_role, event):
    _as_app_role(
        audit_app_role,
        "INSERT INTO audit_auditevent (occurred_at, actor_type, actor_id, actor_name, "
        "request_id, action, object_type, object_id, object_repr, message, prev_hash, hash) "
        "SELECT now(), 'system', '', 'app', '', 'x.y', 't', '', '', '', hash, repeat('a', 64) "
        "FROM audit_auditevent ORDER BY id DESC LIMIT 1",
    )
    assert AuditEvent.objects.count() == 2


def test_the_role_check_warns_when_the_connected_role_owns_the_audit_table(audit_app_role):
    [warning] = check_audit_table()
    assert warning.id == "audit.W001"
    assert "owns, UPDATE, DELETE, TRUNCATE on audit_auditevent" in warning.msg


def test_the_check_warns_when_the_append_only_triggers_are_disabled(audit_app_role):
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_refuse_truncate")
    try:
        warnings = {warning.id: warning for warning in check_audit_table()}
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER audit_refuse_truncate")
    assert "(1 of 2 enabled)" in warnings["audit.W002"].msg
    assert "audit.W002" not in {warning.id for warning in check_audit_table()}


def _app_env(role: dict[str, str], checkpoints: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    env.update(
        DATABASE_URL=(
            f"postgres://{role['user']}:{role['password']}@{role['host']}:{role['port']}/"
            f"{role['dbname']}"
        ),
        AUDIT_CHECKPOINT_FILE=str(checkpoints),
    )
    return env


def test_the_app_role_passes_the_role_check_and_can_run_audit_verify(
    audit_app_role, event, tmp_path
):
    env = _app_env(audit_app_role, tmp_path / "checkpoints.jsonl")
    result = subprocess.run(
        [sys.executable, "manage.py", "audit_verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "audit.W001" not in result.stderr + result.stdout
    assert "1 events verified" in result.stdout
    assert (tmp_path / "checkpoints.jsonl").read_text().count("\n") == 1


def _wait_for_a_line(path: Path, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return
        time.sleep(0.5)


def test_a_celery_worker_running_as_the_app_role_checkpoints_the_chain(
    audit_app_role, event, tmp_path
):
    checkpoints = tmp_path / "checkpoints.jsonl"
    queue = f"audit-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "--queues", queue, "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
        cwd=ROOT, env=_app_env(audit_app_role, checkpoints), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        celery_app.send_task(CHECKPOINT_TASK, queue=queue)
        _wait_for_a_line(checkpoints, timeout_s=60)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    [line] = checkpoints.read_text().splitlines()
    assert json.loads(line)["head_hash"] == event.hash
