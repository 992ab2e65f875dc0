import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean_under_production_settings():
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
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
