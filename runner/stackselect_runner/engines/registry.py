"""Engine adapters by slug, so a job spec's engine name picks its adapter."""

from __future__ import annotations

from stackselect_runner.engines.base import EngineAdapter

_ADAPTERS: dict[str, type[EngineAdapter]] = {}


def register_engine(adapter: type[EngineAdapter]) -> type[EngineAdapter]:
    """Class decorator; a slug may be registered once."""
    slug = adapter.slug
    if slug in _ADAPTERS and _ADAPTERS[slug] is not adapter:
        raise ValueError(f"engine slug {slug!r} is already registered")
    _ADAPTERS[slug] = adapter
    return adapter


def get_engine_adapter(slug: str) -> EngineAdapter:
    try:
        return _ADAPTERS[slug]()
    except KeyError:
        raise ValueError(f"unknown engine {slug!r}; known: {sorted(_ADAPTERS)}") from None


def engine_slugs() -> list[str]:
    return sorted(_ADAPTERS)
