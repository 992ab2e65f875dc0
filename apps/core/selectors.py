"""Reads about the running system: readiness of the database and the broker."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from config.celery import app as celery_app

BROKER_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def database_check() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not ready"
        return Check("database", False, f"{type(exc).__name__}: {exc}")
    return Check("database", True, connection.vendor)


def broker_check() -> Check:
    try:
        with celery_app.connection_for_write(
            url=settings.CELERY_BROKER_URL,
            connect_timeout=BROKER_TIMEOUT_SECONDS,
            transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        ) as conn:
            conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
            transport = conn.transport_cls
    except Exception as exc:  # kombu raises many types; all mean "not reachable"
        return Check("broker", False, f"{type(exc).__name__}: {exc}")
    return Check("broker", True, str(transport))


def readiness() -> list[Check]:
    return [database_check(), broker_check()]
