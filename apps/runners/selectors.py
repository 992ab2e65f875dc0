"""Reads about runners: credentials, enrollment tokens, liveness and the fleet gauges."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Min, QuerySet
from django.utils import timezone

from apps.accounts.scoping import scoped
from apps.accounts.secrets import matches, split_prefix
from apps.catalog.models import Accelerator
from apps.core.metrics import GaugeSample
from apps.runners.choices import CREDENTIAL_KIND, ENROLLMENT_TOKEN_KIND, RunnerState
from apps.runners.labels import CatalogAccelerator, Labels, queues_for
from apps.runners.models import EnrollmentToken, Runner


def runner_authenticate(*, plaintext: str) -> Runner | None:
    """The active runner holding this credential, else None (unknown, rotated or revoked)."""
    prefix = split_prefix(plaintext, CREDENTIAL_KIND)
    if prefix is None:
        return None
    runner = Runner.objects.select_related("team").filter(credential_prefix=prefix).first()
    if runner is None or not runner.is_active or not matches(plaintext, runner.credential_digest):
        return None
    return runner


def enrollment_token_find(*, plaintext: str) -> EnrollmentToken | None:
    prefix = split_prefix(plaintext, ENROLLMENT_TOKEN_KIND)
    if prefix is None:
        return None
    token = EnrollmentToken.objects.select_related("team").filter(prefix=prefix).first()
    if token is None or not matches(plaintext, token.digest):
        return None
    return token


def enrollment_tokens_of(*, team: Any) -> QuerySet[EnrollmentToken]:
    return scoped(EnrollmentToken.objects.select_related("runner", "created_by"), team)


def runners_of(*, team: Any) -> QuerySet[Runner]:
    return scoped(Runner.objects.all(), team)


def catalog_accelerators() -> list[CatalogAccelerator]:
    return [
        CatalogAccelerator(slug, name, memory_gb)
        for slug, name, memory_gb in Accelerator.objects.values_list("slug", "name", "memory_gb")
    ]


def accelerator_names(slugs: set[str]) -> dict[str, str]:
    return dict(Accelerator.objects.filter(slug__in=slugs).values_list("slug", "name"))


def labels_of(runner: Runner) -> Labels:
    labels = runner.labels or {}
    return Labels(
        accelerator=labels.get("accelerator"),
        gpu_count=runner.gpu_count,
        engines=dict(runner.engines),
        simulated=runner.simulated,
        models=frozenset(labels.get("models") or ()),
        drafts={
            key: frozenset(models) for key, models in (labels.get("draft_models") or {}).items()
        },
    )


def runner_queues(runner: Runner) -> list[str]:
    return queues_for(runner_id=runner.pk, team_id=runner.team_id, labels=labels_of(runner))


def offline_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)


def is_online(runner: Runner, *, now: datetime | None = None) -> bool:
    heartbeat = runner.last_heartbeat_at
    return runner.is_active and heartbeat is not None and heartbeat >= offline_cutoff(now)


def runner_state(runner: Runner, *, busy: bool, now: datetime | None = None) -> str:
    if not runner.is_active:
        return RunnerState.REVOKED
    if not is_online(runner, now=now):
        return RunnerState.OFFLINE
    return RunnerState.BUSY if busy else RunnerState.ONLINE


def runner_metrics() -> Iterator[GaugeSample]:
    """Scrape-time gauges: runners online and the age of the oldest heartbeat of active runners."""
    now = timezone.now()
    active = Runner.objects.filter(revoked_at__isnull=True)
    online = active.filter(last_heartbeat_at__gte=offline_cutoff(now)).count()
    yield ("stackselect_runners_online", "Runners with a recent heartbeat.", {}, float(online))
    oldest = active.aggregate(oldest=Min("last_heartbeat_at"))["oldest"]
    age = (now - oldest).total_seconds() if oldest else 0.0
    yield (
        "stackselect_runner_oldest_heartbeat_age_seconds",
        "Seconds since the stalest heartbeat of any active runner (0 with none).",
        {},
        round(age, 3),
    )
