"""The candidate page's kept rows, rendered once per content and kept in the `rendered` cache.

A row's HTML is about three quarters of the page's time (filters and includes over a large
estimate). Its key is a digest of everything the row shows (the candidate's rank, score, stack,
estimate, hints and choice, its measured and published rows), of the templates that draw it,
of the tag libraries they load and of our modules whose functions or classes those libraries
name (and of Django's own filters, by its version), so a change to any of them makes a new key:
there is nothing to invalidate, and a stale row cannot be served. Entries expire after a day.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import import_module
from typing import Any

import django
from django.core.cache import caches
from django.template import engines
from django.template.loader import get_template, render_to_string
from django.utils.safestring import SafeString, mark_safe

ROW_TEMPLATE = "selections/_kept_row.html"
# Every template the row draws with; their sources are part of the key.
ROW_TEMPLATES = (
    ROW_TEMPLATE,
    "selections/_stack_label.html",
    "selections/_error_band.html",
    "selections/_band_scope.html",
    "selections/_band_outside.html",
    "selections/_published.html",
    "selections/_hint_item.html",
    "selections/_latency_line.html",
)
TIMEOUT_S = 24 * 3600
# `{% load facts %}`: the tag libraries a template uses; their modules' sources are in the key.
LOAD = re.compile(r"{%\s*load\s+([^%]+?)\s*%}")


@cache
def _templates_digest() -> str:
    """The row's templates, the source of every tag library they load (a change of a filter
    such as `signed_percent` is a change of the row) and Django's version, for its builtins."""
    sources = [get_template(name).template.source for name in ROW_TEMPLATES]
    loaded = {
        name for source in sources for found in LOAD.findall(source) for name in found.split()
    }
    modules = sorted(set().union(*(_library_modules(name) for name in loaded)))
    sources += [inspect.getsource(import_module(module)) for module in modules]
    sources.append(django.get_version())
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()[:16]


def _library_modules(name: str) -> set[str]:
    """A tag library's module, and ours that define a function or class it names: a filter may
    register a function written elsewhere (`layouts` registers operating_point.in_flight) or
    apply a rule written elsewhere (Parallelism.replicas_run_alone)."""
    module = engines["django"].engine.libraries[name]
    named = {
        value.__module__
        for value in vars(import_module(module)).values()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__.startswith("apps.")
    }
    return {module} | named


def _key(context: dict[str, Any]) -> str:
    candidate = context["candidate"]
    shown = [
        candidate.pk,
        candidate.rank,
        candidate.score,
        candidate.stack,
        candidate.estimate,
        candidate.hints,
        candidate.chosen,
        context["measured_rows"],
        context["published_rows"],
        context["any_published"],
        context["published_empty"],
    ]
    digest = hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()
    return f"kept-row:{_templates_digest()}:{digest}"


def kept_rows_html(rows: Sequence[dict[str, Any]]) -> list[SafeString]:
    """The `<tr>` of each row context (candidate, measured_rows, published_rows, any_published,
    published_empty), from the cache where it holds the same content, rendered otherwise."""
    store = caches["rendered"]
    keys = [_key(context) for context in rows]
    found = store.get_many(keys)
    rendered = {}
    html = []
    for key, context in zip(keys, rows, strict=True):
        if key not in found:
            rendered[key] = found[key] = render_to_string(ROW_TEMPLATE, context)
        html.append(mark_safe(found[key]))  # our own template's output, escaped when rendered
    if rendered:
        store.set_many(rendered, timeout=TIMEOUT_S)
    return html
