"""Reads of decision records, their notifications and which records an event concerns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from apps.accounts.scoping import get_scoped_or_404, scoped
from apps.catalog.models import Capability, EngineRelease, ModelSpec
from apps.decisions.choices import IN_FORCE_STATUSES
from apps.decisions.models import DecisionRecord, RetestTrigger
from apps.runners.models import Runner
from apps.selections.models import WorkloadTrace

LIST_FIELDS = ("goal", "candidates", "evidence", "baseline")


def records_of(*, team: Any) -> QuerySet[DecisionRecord]:
    """The team's records without their large snapshots, newest first."""
    return scoped(DecisionRecord.objects.defer(*LIST_FIELDS), team).select_related(
        "created_by", "decided_by"
    )


def record_get(*, team: Any, record_id: int) -> DecisionRecord:
    return get_scoped_or_404(
        DecisionRecord.objects.select_related(
            "team",
            "selection__created_by",
            "created_by",
            "proposed_by",
            "decided_by",
            "supersedes",
            "superseded_by",
        ),
        team,
        pk=record_id,
    )


def notifications_of(*, team: Any) -> QuerySet[RetestTrigger]:
    """Fired triggers nobody has acknowledged yet: the in-app notification list."""
    return scoped(
        RetestTrigger.objects.filter(acknowledged_at__isnull=True), team, team_field="record__team"
    ).select_related("record")


def in_force_ids(*, team_id: int | None = None) -> list[int]:
    records = DecisionRecord.objects.filter(status__in=IN_FORCE_STATUSES)
    if team_id is not None:
        records = records.filter(team_id=team_id)
    return list(records.order_by("pk").values_list("pk", flat=True))


def ids_for_runner(*, runner_id: int) -> list[int]:
    team_id = Runner.objects.filter(pk=runner_id).values_list("team_id", flat=True).first()
    return [] if team_id is None else in_force_ids(team_id=team_id)


def ids_for_trace(*, trace_id: int) -> list[int]:
    team_id = WorkloadTrace.objects.filter(pk=trace_id).values_list("team_id", flat=True).first()
    return [] if team_id is None else in_force_ids(team_id=team_id)


def ids_for_catalog_change(
    *,
    capability_ids: Iterable[int] = (),
    release_ids: Iterable[int] = (),
    model_ids: Iterable[int] = (),
) -> list[int]:
    """In-force records that use a changed cell, the engine of a changed release (new
    releases, backends) or a changed model."""
    cells = {str(pk) for pk in capability_ids}
    engines = set(
        EngineRelease.objects.filter(pk__in=list(release_ids)).values_list(
            "engine__slug", flat=True
        )
    )
    engines |= set(
        Capability.objects.filter(pk__in=list(cells)).values_list(
            "release__engine__slug", flat=True
        )
    )
    models = set(ModelSpec.objects.filter(pk__in=list(model_ids)).values_list("slug", flat=True))
    records = DecisionRecord.objects.filter(status__in=IN_FORCE_STATUSES).only(
        "pk", "baseline", "goal"
    )
    return [
        record.pk
        for record in records.order_by("pk")
        if cells & set(record.baseline.get("cells", {}))
        or record.baseline.get("engine") in engines
        or (record.goal.get("model") or {}).get("slug") in models
    ]
