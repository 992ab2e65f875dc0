"""Celery entry points of the benchmarks app; each loads by id (or scans) and is safe twice."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from apps.benchmarks.dispatch import reap_expired_leases


@shared_task(name="benchmarks.reap_expired_leases", ignore_result=True)
def reap_expired_leases_task() -> dict[str, int]:
    """Beat task: lost attempts, retries, stale dispatches and waiting jobs (see dispatch.py)."""
    return asdict(reap_expired_leases())
