import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean_under_production_settings(audit_app_role):
    """As in production, the app connects as a role that may only INSERT and SELECT the audit
    table (README, Production); as the owner the audit role check (audit.W001) would warn."""
    role = audit_app_role
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
        DATABASE_URL=(
            f"postgres://{role['user']}:{role['password']}@{role['host']}:{role['port']}/"
            f"{role['dbname']}"
        ),
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="true",
        SECURE_HSTS_SECONDS="31536000",
        ALLOWED_HOSTS="stackselect.example.com",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
