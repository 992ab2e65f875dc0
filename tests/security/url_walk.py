"""Every URL pattern of the project, each turned into a concrete path by filling its parameters,
and checked by resolving that path back to the same pattern."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern

ROUTE_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>\w+)>")
REGEX_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")


@dataclass(frozen=True)
class Endpoint:
    """One URL pattern: its full route text, qualified name and parameter names."""

    route: str
    name: str
    params: tuple[str, ...]
    parts: tuple[object, ...]

    def path(self, value_of: Callable[[Endpoint, str], str]) -> str:
        """The concrete path with each parameter filled by `value_of(self, name)`."""
        text = "".join(_fill(part, lambda name: value_of(self, name)) for part in self.parts)
        return "/" + text


def endpoints() -> Iterator[Endpoint]:
    yield from _walk(get_resolver(), route="", namespace="", parts=())


def _walk(
    resolver: URLResolver, *, route: str, namespace: str, parts: tuple[object, ...]
) -> Iterator[Endpoint]:
    for entry in resolver.url_patterns:
        here = (*parts, entry.pattern)
        text = route + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry, route=text, namespace=inner, parts=here)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}{entry.name}" if entry.name else f"{namespace}<unnamed>"
            yield Endpoint(route=text, name=name, params=_params(here), parts=here)


def _params(parts: tuple[object, ...]) -> tuple[str, ...]:
    names: list[str] = []
    for part in parts:
        if isinstance(part, RoutePattern):
            names += [m["name"] for m in ROUTE_PARAM.finditer(str(part))]
        elif isinstance(part, RegexPattern):
            names += list(part.regex.groupindex)
    return tuple(names)


def _fill(part: object, value: Callable[[str], str]) -> str:
    text = str(part)
    if isinstance(part, RoutePattern):
        return ROUTE_PARAM.sub(lambda m: _route_value(m, value), text)
    text = REGEX_GROUP.sub(lambda m: value(m["name"]), text)
    return text.removeprefix("^").removesuffix("$").removesuffix("/?").replace("\\", "")


def _route_value(match: re.Match, value: Callable[[str], str]) -> str:
    """DRF's format-suffix converter matches the dot as well (`.json`)."""
    prefix = "." if match["converter"] == "drf_format_suffix" else ""
    return prefix + value(match["name"])


def resolves_to(endpoint: Endpoint, path: str) -> bool:
    """True when `path` reaches this very pattern (so the walk requested what it claims)."""
    try:
        route = resolve(path.split("?")[0]).route
    except Resolver404:
        return False
    return route.replace("^", "") == endpoint.route.replace("^", "")
