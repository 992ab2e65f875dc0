"""Loads the curated catalog fixtures (fixtures/catalog/*.json) into the test database.

A test helper only, written before `manage.py catalog_load` existed; it keeps the rows as they
are in the files and skips the curation checks the real loader applies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.db import models

from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
    ReleaseBackend,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"


def _read(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def _fields(model: type, row: dict[str, Any]) -> dict[str, Any]:
    """The row's values for the model's columns; a null text value becomes the empty string."""
    text = {f.name for f in model._meta.concrete_fields if isinstance(f, models.CharField)}
    text |= {f.name for f in model._meta.concrete_fields if isinstance(f, models.TextField)}
    names = {field.name for field in model._meta.concrete_fields} - {"id"}
    return {
        key: ("" if value is None and key in text else value)
        for key, value in row.items()
        if key in names
    }


def _release(engine: Engine, row: dict[str, Any]) -> EngineRelease:
    defaults = dict(row.get("defaults") or {})
    extra = {
        "defaults_source": defaults.pop("source", ""),
        "defaults_as_of": defaults.pop("as_of", None),
    }
    values = _fields(EngineRelease, {**row, **defaults, **extra})
    return EngineRelease.objects.create(engine=engine, **values)


def load_catalog() -> None:
    Feature.objects.bulk_create(Feature(**_fields(Feature, r)) for r in _read("features"))
    KernelBackend.objects.bulk_create(
        KernelBackend(**_fields(KernelBackend, r)) for r in _read("backends")
    )
    Accelerator.objects.bulk_create(
        Accelerator(**_fields(Accelerator, r)) for r in _read("accelerators")
    )
    ModelSpec.objects.bulk_create(ModelSpec(**_fields(ModelSpec, r)) for r in _read("models"))
    backends = {b.slug: b for b in KernelBackend.objects.all()}
    releases = {}
    for row in _read("engines"):
        engine = Engine.objects.create(**_fields(Engine, row))
        for release_row in row["releases"]:
            release = _release(engine, release_row)
            releases[(engine.slug, release.version)] = release
            for backend in release_row.get("backends") or []:
                ReleaseBackend.objects.create(
                    release=release,
                    backend=backends[backend["backend"]],
                    vendors=backend.get("vendors") or [],
                    is_default=bool(backend.get("default")),
                )
    features = {f.key: f for f in Feature.objects.all()}
    Capability.objects.bulk_create(
        Capability(
            release=releases[(row["engine"], row["version"])],
            feature=features[row["feature"]],
            backend=backends[row["backend"]] if row.get("backend") else None,
            vendor=row.get("vendor") or "",
            family=row.get("family") or "",
            maturity=row["maturity"],
            note=row.get("note", ""),
            evidence_url=row["evidence_url"],
            as_of=row["as_of"],
            verified_by=row.get("verified_by", ""),
        )
        for row in _read("capabilities")
    )
