"""Writes to the catalog. Every change runs in one transaction with its audit event.

Curators edit through forms, the admin and the API, and the loader and the importer write too;
all of them come through `entry_create`, `entry_update` and `entry_delete`, so every path
applies the same validation (model constraints plus the maturity-evidence rule) and leaves the
same before/after record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import ProtectedError

from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot
from apps.catalog.editable import RELEASE_DEFAULT_FIELDS
from apps.catalog.interchange import ImportPlan, plan_import, read_rows
from apps.catalog.maturity_rule import CellEvidence, maturity_change_errors
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
    PublishedMeasurement,
    ReleaseBackend,
)
from apps.catalog.published_overview import OverviewRow
from apps.catalog.published_sample import (
    LICENCE,
    SOURCE_AS_OF,
    SOURCE_NAME,
    SOURCE_URL,
    PublishedRow,
)
from apps.catalog.signals import batched_catalog_changes, entry_changed
from apps.core.errors import ConflictError

M = TypeVar("M", bound=models.Model)
# A row of either published source: AIConfigurator's sample or the TensorRT-LLM overview.
ImportedRow = PublishedRow | OverviewRow

# Audit action prefixes: "<entity>.create", "<entity>.update", "<entity>.delete".
ENTITY_NAMES: dict[type[models.Model], str] = {
    Engine: "engine",
    EngineRelease: "release",
    KernelBackend: "backend",
    ReleaseBackend: "release_backend",
    Accelerator: "accelerator",
    ModelSpec: "model",
    Feature: "feature",
    Capability: "capability",
}


def _action(model: type[models.Model], verb: str) -> str:
    return f"{ENTITY_NAMES[model]}.{verb}"


def cell_evidence(values: Capability | Mapping[str, Any]) -> CellEvidence:
    get = values.get if isinstance(values, Mapping) else lambda name: getattr(values, name)
    return CellEvidence(get("maturity") or "", get("evidence_url") or "", get("as_of"))


def _check_cell_change(before: Capability, after: Capability) -> None:
    errors = maturity_change_errors(before=cell_evidence(before), after=cell_evidence(after))
    if errors:
        raise ValidationError(errors)


# Rules beyond the model's own validation, run on an update with (stored copy, edited copy).
_UPDATE_RULES: dict[type[models.Model], Callable[[Any, Any], None]] = {
    Capability: _check_cell_change,
}


@transaction.atomic
def entry_create(
    *, actor: Actor, model: type[M], values: Mapping[str, Any], message: str = ""
) -> M:
    """Validate and create one catalog row, recording its values."""
    instance = model(**values)
    instance.full_clean()
    instance.save()
    audit_record(
        actor=actor,
        action=_action(model, "create"),
        obj=instance,
        after=snapshot(instance),
        message=message,
    )
    entry_changed(instance=instance)
    return instance


@transaction.atomic
def entry_update(*, actor: Actor, instance: M, changes: Mapping[str, Any], message: str = "") -> M:
    """Apply `changes` to the stored row; no event when nothing actually changes.

    The row is re-read under a lock, so a form or serializer that already mutated `instance`
    cannot hide the real before-values.
    """
    model = type(instance)
    stored = model.objects.select_for_update().get(pk=instance.pk)
    before = snapshot(stored)
    edited = model.objects.get(pk=instance.pk)
    for name, value in changes.items():
        setattr(edited, name, value)
    if snapshot(edited) == before:
        return stored
    edited.full_clean()
    rule = _UPDATE_RULES.get(model)
    if rule is not None:
        rule(stored, edited)
    edited.save()
    audit_record(
        actor=actor,
        action=_action(model, "update"),
        obj=edited,
        before=before,
        after=snapshot(edited),
        message=message,
    )
    entry_changed(instance=edited)
    return edited


@transaction.atomic
def entry_delete(*, actor: Actor, instance: models.Model, message: str = "") -> None:
    model = type(instance)
    before = snapshot(instance)
    object_id, label = instance.pk, str(instance)
    try:
        instance.delete()
    except ProtectedError as error:
        raise ConflictError(
            f"{label} is still used by other catalog rows; change those first.", code="protected"
        ) from error
    audit_record(
        actor=actor,
        action=_action(model, "delete"),
        object_type=model._meta.label_lower,
        object_id=object_id,
        object_repr=label,
        before=before,
        message=message,
    )
    entry_changed(instance=instance, pk=object_id)


@transaction.atomic
def release_start_from_previous(
    *, actor: Actor, previous: EngineRelease, version: str, release_date: date | None = None
) -> EngineRelease:
    """Start `version` as a copy of `previous`: defaults, backends and cells, all to review.

    The copied cells keep their old evidence, which describes the previous release; the
    needs_review flag tells curators and the matrix that nobody has confirmed them yet.
    """
    if EngineRelease.objects.filter(engine=previous.engine, version=version).exists():
        raise ValidationError({"version": f"{previous.engine} {version} exists already."})
    message = f"copied forward from {previous}"
    release_values = {name: getattr(previous, name) for name in RELEASE_DEFAULT_FIELDS}
    release = entry_create(
        actor=actor,
        model=EngineRelease,
        values={
            **release_values,
            "engine": previous.engine,
            "version": version,
            "release_date": release_date,
            "needs_review": True,
        },
        message=message,
    )
    for row in previous.backends.select_related("backend"):
        entry_create(
            actor=actor,
            model=ReleaseBackend,
            values={
                "release": release,
                "backend": row.backend,
                "vendors": row.vendors,
                "is_default": row.is_default,
            },
            message=message,
        )
    for cell in previous.capabilities.select_related("feature", "backend"):
        entry_create(
            actor=actor,
            model=Capability,
            values={**_cell_values(cell), "release": release, "needs_review": True},
            message=message,
        )
    return release


def _cell_values(cell: Capability) -> dict[str, Any]:
    return {
        "feature": cell.feature,
        "backend": cell.backend,
        "vendor": cell.vendor,
        "family": cell.family,
        "maturity": cell.maturity,
        "note": cell.note,
        "evidence_url": cell.evidence_url,
        "as_of": cell.as_of,
        "verified_by": cell.verified_by,
    }


@transaction.atomic
def matrix_import(*, actor: Actor, content: bytes, file_format: str, apply: bool) -> ImportPlan:
    """Plan an import of the whole matrix; apply it only when asked and every row is valid.

    A dry run (apply=False) returns the diff and writes nothing. Applying writes one audit
    event per added, changed or removed cell, all in this one transaction. ValueError when the
    file cannot be read as a table at all.
    """
    plan = plan_import(read_rows(content, file_format))
    if plan.errors or not apply:
        return plan
    message = f"matrix import ({file_format})"
    with batched_catalog_changes():
        for change in plan.added:
            entry_create(
                actor=actor,
                model=Capability,
                values={
                    **change.refs,
                    "vendor": change.key.vendor,
                    "family": change.key.family,
                    **change.after,
                },
                message=message,
            )
        for change in plan.changed:
            entry_update(
                actor=actor, instance=change.capability, changes=change.after, message=message
            )
        for change in plan.removed:
            entry_delete(actor=actor, instance=change.capability, message=message)
    plan.applied = True
    return plan


@dataclass(frozen=True)
class PublishedImportReport:
    created: int
    updated: int
    unchanged: int

    @property
    def changed_anything(self) -> bool:
        return bool(self.created or self.updated)


def _catalog_ids(rows: Sequence[ImportedRow]) -> dict[str, dict[str, int]]:
    """Slug -> id for the models, accelerators and engines the rows name; ValueError naming
    every slug the catalog lacks, so one run reports all of them."""
    wanted = {
        "model": (ModelSpec, {row.model_slug or f"? {row.model_path}" for row in rows}),
        "accelerator": (Accelerator, {row.accelerator_slug or f"? {row.system}" for row in rows}),
        "engine": (Engine, {row.engine_slug or f"? {row.backend}" for row in rows}),
    }
    ids: dict[str, dict[str, int]] = {}
    missing: list[str] = []
    for kind, (model, slugs) in wanted.items():
        ids[kind] = dict(model.objects.filter(slug__in=slugs).values_list("slug", "pk"))
        missing += [f"{kind} {slug}" for slug in sorted(slugs - set(ids[kind]))]
    if missing:
        raise ValueError(
            "the catalog lacks "
            + ", ".join(missing)
            + " (load the curated catalog first: manage.py catalog_load)"
        )
    return ids


def _published_values(row: ImportedRow, ids: Mapping[str, Mapping[str, int]], **source) -> dict:
    return {
        **source,
        "measured_on": row.measured_on,
        "source_detail": row.detail,
        "model_id": ids["model"][row.model_slug or ""],
        "checkpoint": row.model_path,
        "accelerator_id": ids["accelerator"][row.accelerator_slug or ""],
        "system": row.system,
        "engine_id": ids["engine"][row.engine_slug or ""],
        "engine_version": row.backend_version,
        "precision": row.precision,
        "mode": row.mode,
        "tp": row.tp,
        "pp": row.pp,
        "ep": row.ep,
        "dp": row.dp,
        "layout": row.layout,
        "isl": row.isl,
        "osl": row.osl,
        "concurrency": row.concurrency,
        "batch_size": row.batch_size,
        "scenario": row.scenario,
        "ttft_ms": row.ttft_ms,
        "tpot_ms": row.tpot_ms,
        "output_tokens_s_per_gpu": row.output_tokens_s_per_gpu,
        "held_out": row.held_out,
    }


@transaction.atomic
def published_import(
    *,
    actor: Actor,
    rows: Sequence[ImportedRow],
    source_name: str = SOURCE_NAME,
    source_url: str = SOURCE_URL,
    licence: str = LICENCE,
    as_of: date = SOURCE_AS_OF,
) -> PublishedImportReport:
    """Create or update the published measurements of one source, keyed by their source id.

    Importing the same rows twice changes nothing and writes no audit event; otherwise one
    event records the counts. ValueError (nothing written) when a row names a model,
    accelerator or engine the catalog lacks.
    """
    ids = _catalog_ids(rows)
    source = {"source_url": source_url, "licence": licence, "as_of": as_of}
    stored = {m.source_key: m for m in PublishedMeasurement.objects.filter(source_name=source_name)}
    created: list[PublishedMeasurement] = []
    updated: list[PublishedMeasurement] = []
    names: list[str] = []
    for row in rows:
        values = _published_values(row, ids, **source)
        names = list(values)
        existing = stored.get(row.key)
        if existing is None:
            created.append(
                PublishedMeasurement(source_name=source_name, source_key=row.key, **values)
            )
        elif any(getattr(existing, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(existing, name, value)
            updated.append(existing)
    report = PublishedImportReport(
        len(created), len(updated), len(rows) - len(created) - len(updated)
    )
    if not report.changed_anything:
        return report
    PublishedMeasurement.objects.bulk_create(created, batch_size=1000)
    PublishedMeasurement.objects.bulk_update(updated, names, batch_size=1000)
    audit_record(
        actor=actor,
        action="published.import",
        object_type=PublishedMeasurement._meta.label_lower,
        object_id=source_name[:64],
        object_repr=source_name,
        after={"created": report.created, "updated": report.updated, "rows": len(rows)},
        message=f"published measurements from {source_url} ({licence}, as of {as_of})",
    )
    return report
