"""The main navigation: a section is a link once its app is installed, a greyed label before."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

SECTIONS = (
    ("Selections", "selections:list"),
    ("Catalog", "catalog:matrix"),
    ("Runners", "runners:list"),
    ("Benchmarks", "benchmarks:list"),
    ("Decisions", "decisions:list"),
    ("Audit", "audit:events"),
)


@dataclass(frozen=True)
class NavItem:
    label: str
    url: str | None


def navigation() -> list[NavItem]:
    items = []
    for label, url_name in SECTIONS:
        try:
            items.append(NavItem(label, reverse(url_name)))
        except NoReverseMatch:
            items.append(NavItem(label, None))
    return items
