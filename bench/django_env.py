"""Django set-up for the benches that run the app's own code outside a server.

A bench runs as a script (`python bench/bench_x.py`), so its own folder is on the path and this
module imports by name; `setup_django` puts the repository on the path too, applies the bench's
environment and the project settings, and sets Django up before the bench imports any app.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(**environment: str) -> None:
    """`environment` overrides the caller's (a throw-away database, say); the settings module
    and a bench-only secret key are defaults the caller's environment may replace."""
    sys.path.insert(0, str(ROOT))
    os.environ.update(environment)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    import django

    django.setup()
