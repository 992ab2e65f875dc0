"""Small catalog rows for tests that do not need the whole curated catalog."""

from __future__ import annotations

from datetime import date
from typing import Any

from apps.catalog.models import Capability, Engine, EngineRelease, Feature

EVIDENCE = "https://example.org/docs/feature"
AS_OF = date(2026, 11, 1)


def make_engine(slug: str = "vllm", **extra: Any) -> Engine:
    values = {"name": slug.upper(), "kind": "engine", **extra}
    return Engine.objects.create(slug=slug, **values)


def make_release(engine: Engine, version: str = "1.0.0", **extra: Any) -> EngineRelease:
    return EngineRelease.objects.create(engine=engine, version=version, **extra)


def make_feature(key: str = "prefix_caching", contract: str = "kv") -> Feature:
    return Feature.objects.create(key=key, name=key.replace("_", " "), contract=contract)


def make_cell(release: EngineRelease, feature: Feature, **extra: Any) -> Capability:
    values = {"maturity": "beta", "evidence_url": EVIDENCE, "as_of": AS_OF, **extra}
    return Capability.objects.create(release=release, feature=feature, **values)
