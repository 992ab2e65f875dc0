"""Strict query strings for the API: a parameter an operation does not document, one given
twice, an empty value or a boolean spelled otherwise than true/false is a 400 naming it.

DRF and django-filter read query strings like HTML forms, where an empty or unknown value
means "no filter": a mistyped filter then silently answers the unfiltered list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django_filters import BooleanFilter
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError

ACCEPTED_EVERYWHERE = frozenset({"format"})  # DRF's renderer choice (?format=json)
BOOLEANS = ("true", "false")


def check_query(request: Any, allowed: Iterable[str], booleans: Iterable[str] = ()) -> None:
    """Refuse unknown, repeated and empty parameters, and booleans not true/false."""
    allowed, booleans = set(allowed) | ACCEPTED_EVERYWHERE, set(booleans)
    errors: dict[str, list[str]] = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        if name not in allowed:
            errors[name] = [f"Not a parameter of this operation (it takes {_names(allowed)})."]
        elif len(values) > 1:
            errors[name] = ["Give this parameter once."]
        elif values[0] == "":
            errors[name] = ["Must not be empty: leave the parameter out instead."]
        elif name in booleans and values[0] not in BOOLEANS:
            errors[name] = ["Must be true or false."]
    if errors:
        raise ValidationError(errors)


def _names(allowed: set[str]) -> str:
    shown = sorted(allowed - ACCEPTED_EVERYWHERE)
    return ", ".join(shown) if shown else "none"


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter's backend behind check_query: the filters of the view's FilterSet and
    the paginator's page are the parameters; the FilterSet then checks each value."""

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        filters = filterset_class.base_filters if filterset_class else {}
        paginator = getattr(view, "paginator", None)
        listing = getattr(view, "action", None) == "list"
        paging = [paginator.page_query_param] if paginator and listing else []
        booleans = [name for name, item in filters.items() if isinstance(item, BooleanFilter)]
        check_query(request, [*filters, *paging], booleans)
        return super().filter_queryset(request, queryset, view)
