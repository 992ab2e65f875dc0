"""Start-up with bad configuration must stop with a message naming the variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check(**env: str) -> subprocess.CompletedProcess:
    environment = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe", "SECRET_KEY": "k"}, "DEBUG='maybe' is not a boolean"),
        (
            {"SECRET_KEY": "k", "DB_CONN_MAX_AGE": "soon"},
            "DB_CONN_MAX_AGE='soon' is not a whole number",
        ),
        ({"SECRET_KEY": "k", "LOG_LEVEL": "LOUD"}, "LOG_LEVEL='LOUD' is not one of"),
        (
            {"SECRET_KEY": "k", "DATABASE_URL": "nonsense://x"},
            "DATABASE_URL='nonsense://x' is not a database URL",
        ),
        ({}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "k", "INVITATION_TTL_S": "60"}, "INVITATION_TTL_S=60 must be at least 300"),
        ({"SECRET_KEY": "k", "EMAIL_PORT": "smtp"}, "EMAIL_PORT='smtp' is not a whole number"),
    ],
)
def test_a_bad_environment_value_stops_start_up_with_a_clear_message(env, message):
    result = _check(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_secret_can_be_read_from_a_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    result = _check(
        SECRET_KEY_FILE=str(secret), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}"
    )
    assert result.returncode == 0, result.stderr
