"""Loading the curated fixtures (fixtures/catalog/*.json) into the catalog.

Rows are matched on their natural keys (slugs, feature keys, engine+version, the cell's
release/feature/backend/vendor/family), so a second load finds everything equal and writes
nothing, not even an audit event. Rows absent from the fixtures are left alone: curators may
have added them, and removing a cell is an import's job, where a dry run shows it first.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import models, transaction
from stackselect_domain.tuning import WORKLOAD_CLASSES, tunable_part

from apps.audit.services import Actor
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
from apps.catalog.services import ENTITY_NAMES, entry_create, entry_update
from apps.catalog.signals import batched_catalog_changes

FIXTURE_DIR = Path(settings.BASE_DIR) / "fixtures" / "catalog"
LOAD_MESSAGE = "catalog_load from fixtures/catalog"
M = TypeVar("M", bound=models.Model)
SOURCE_URL = re.compile(r"https?://\S+")


@dataclass
class LoadReport:
    created: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)

    @property
    def changed_anything(self) -> bool:
        return bool(self.created or self.updated)


class _Loader:
    def __init__(self, actor: Actor, fixture_dir: Path) -> None:
        self.actor = actor
        self.fixture_dir = fixture_dir
        self.report = LoadReport()

    def read(self, name: str) -> list[dict[str, Any]]:
        path = self.fixture_dir / f"{name}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: cannot read the fixture ({error})") from error
        if not isinstance(data, list):
            raise ValueError(f"{path}: the top level must be a list")
        return data

    def upsert(self, model: type[M], existing: M | None, values: Mapping[str, Any]) -> M:
        name = ENTITY_NAMES[model]
        values = _blank_for_null(model, values)
        if existing is None:
            self.report.created[name] += 1
            return entry_create(actor=self.actor, model=model, values=values, message=LOAD_MESSAGE)
        changes = {key: value for key, value in values.items() if _differs(existing, key, value)}
        if not changes:
            self.report.unchanged[name] += 1
            return existing
        self.report.updated[name] += 1
        return entry_update(
            actor=self.actor, instance=existing, changes=changes, message=LOAD_MESSAGE
        )


def _blank_for_null(model: type[models.Model], values: Mapping[str, Any]) -> dict[str, Any]:
    """The fixtures write "no value" as null; text columns store it as the empty string."""
    cleaned = dict(values)
    for key, value in values.items():
        model_field = model._meta.get_field(key)
        is_text = isinstance(model_field, (models.CharField, models.TextField))
        if value is None and is_text and not model_field.null:
            cleaned[key] = ""
    return cleaned


def _differs(instance: models.Model, key: str, value: Any) -> bool:
    model_field = instance._meta.get_field(key)
    if model_field.is_relation:
        return getattr(instance, model_field.attname) != (value.pk if value else None)
    return getattr(instance, key) != model_field.to_python(value)


@contextmanager
def _fixture_entry(name: str, index: int) -> Iterator[None]:
    """Names the file and entry of a fixture that lacks a field or points at nothing."""
    try:
        yield
    except KeyError as error:
        raise ValueError(f"{name}.json entry {index}: {error.args[0]!r} is missing") from error


def _load_simple(loader: _Loader, name: str, model: type[M], key: str) -> dict[str, M]:
    existing = {getattr(row, key): row for row in model.objects.all()}
    for index, entry in enumerate(loader.read(name)):
        with _fixture_entry(name, index):
            existing[entry[key]] = loader.upsert(model, existing.get(entry[key]), entry)
    return existing


def checked_recommendations(entries: Any) -> list[dict[str, Any]]:
    """A release's documented settings: each names its workload class, its source and date."""
    if not isinstance(entries, list):
        raise ValueError("tuned: must be a list")
    for index, entry in enumerate(entries):
        where = f"tuned[{index}]"
        if entry.get("workload_class") not in WORKLOAD_CLASSES:
            raise ValueError(f"{where}.workload_class: one of {', '.join(WORKLOAD_CLASSES)}")
        if not entry.get("source") or not entry.get("as_of"):
            raise ValueError(f"{where}: a recommendation needs its source and as_of date")
        if not SOURCE_URL.search(str(entry["source"])):
            raise ValueError(f"{where}.source: name the docs page by its http(s) URL")
        if not isinstance(entry.get("settings") or {}, dict):
            raise ValueError(f"{where}.settings: must be an object")
        tunable_part(entry.get("settings") or {})
    return entries


def _release_values(engine: Engine, entry: Mapping[str, Any]) -> dict[str, Any]:
    defaults = entry.get("defaults") or {}
    return {
        "engine": engine,
        "version": entry["version"],
        "release_date": entry.get("release_date"),
        "source": entry.get("source"),
        "as_of": entry.get("as_of"),
        "serves_engines": entry.get("serves_engines") or [],
        "serves_source": entry.get("serves_source"),
        "serves_as_of": entry.get("serves_as_of"),
        "max_num_batched_tokens": defaults.get("max_num_batched_tokens"),
        "max_num_seqs": defaults.get("max_num_seqs"),
        "budget_tiers": defaults.get("budget_tiers") or [],
        "kv_block_size": defaults.get("kv_block_size"),
        "chunked_prefill_default": defaults.get("chunked_prefill_default"),
        "unchunked_limit": defaults.get("unchunked_limit") or "",
        "prefix_cache_kind": defaults.get("prefix_cache_kind"),
        "prefix_cache_default_on": defaults.get("prefix_cache_default_on"),
        "defaults_source": defaults.get("source"),
        "defaults_as_of": defaults.get("as_of"),
        "memory_fraction": defaults.get("memory_fraction"),
        "memory_fraction_basis": defaults.get("memory_fraction_basis"),
        "memory_fraction_source": defaults.get("memory_fraction_source"),
        "memory_fraction_as_of": defaults.get("memory_fraction_as_of"),
        "tuned_settings": checked_recommendations(entry.get("tuned") or []),
    }


def _load_engines(
    loader: _Loader, backends: Mapping[str, KernelBackend]
) -> dict[tuple[str, str], EngineRelease]:
    engines = {row.slug: row for row in Engine.objects.all()}
    releases = {
        (r.engine.slug, r.version): r for r in EngineRelease.objects.select_related("engine")
    }
    release_backends = {(r.release_id, r.backend_id): r for r in ReleaseBackend.objects.all()}
    for index, entry in enumerate(loader.read("engines")):
        with _fixture_entry("engines", index):
            engine_values = {key: value for key, value in entry.items() if key != "releases"}
            engine = loader.upsert(Engine, engines.get(entry["slug"]), engine_values)
            for release_entry in entry.get("releases", []):
                release_key = (engine.slug, release_entry["version"])
                release = loader.upsert(
                    EngineRelease, releases.get(release_key), _release_values(engine, release_entry)
                )
                releases[release_key] = release
                for row in release_entry.get("backends", []):
                    backend = backends[row["backend"]]
                    values = {
                        "release": release,
                        "backend": backend,
                        "vendors": row.get("vendors", []),
                        "is_default": bool(row.get("default")),
                    }
                    stored = release_backends.get((release.pk, backend.pk))
                    loader.upsert(ReleaseBackend, stored, values)
    return releases


def _load_capabilities(
    loader: _Loader,
    releases: Mapping[tuple[str, str], EngineRelease],
    features: Mapping[str, Feature],
    backends: Mapping[str, KernelBackend],
) -> None:
    cells = {
        (c.release_id, c.feature_id, c.backend_id, c.vendor, c.family): c
        for c in Capability.objects.all()
    }
    for index, entry in enumerate(loader.read("capabilities")):
        with _fixture_entry("capabilities", index):
            release = releases[(entry["engine"], entry["version"])]
            feature = features[entry["feature"]]
            backend = backends[entry["backend"]] if entry.get("backend") else None
            vendor, family = entry.get("vendor") or "", entry.get("family") or ""
            key = (release.pk, feature.pk, backend.pk if backend else None, vendor, family)
            values = {
                "release": release,
                "feature": feature,
                "backend": backend,
                "vendor": vendor,
                "family": family,
                "maturity": entry["maturity"],
                "note": entry.get("note"),
                "evidence_url": entry["evidence_url"],
                "as_of": entry["as_of"],
                "verified_by": entry.get("verified_by"),
            }
            loader.upsert(Capability, cells.get(key), values)


@transaction.atomic
def catalog_load(*, actor: Actor, fixture_dir: Path = FIXTURE_DIR) -> LoadReport:
    """Create or update every curated row in one transaction; a bad fixture changes nothing."""
    loader = _Loader(actor, fixture_dir)
    with batched_catalog_changes():
        features = _load_simple(loader, "features", Feature, "key")
        backends = _load_simple(loader, "backends", KernelBackend, "slug")
        _load_simple(loader, "accelerators", Accelerator, "slug")
        _load_simple(loader, "models", ModelSpec, "slug")
        releases = _load_engines(loader, backends)
        _load_capabilities(loader, releases, features, backends)
    return loader.report


def fixture_instances(model: type[M], name: str, fixture_dir: Path = FIXTURE_DIR) -> dict[str, M]:
    """Unsaved catalog rows of one fixture file keyed by slug, for code that reads the curated
    facts without a database (the accuracy benchmark, pure tests)."""
    loader = _Loader(Actor.system("fixture_instances"), fixture_dir)
    names = {item.name for item in model._meta.get_fields() if item.concrete}
    rows: dict[str, M] = {}
    for entry in loader.read(name):
        values = _blank_for_null(model, {k: v for k, v in entry.items() if k in names})
        rows[entry["slug"]] = model(**values)
    return rows
