"""The one place that scopes team-owned data to the acting team.

Every selector of a team-owned model goes through `scoped`, and every lookup by id through
`get_scoped_or_404` (a `NotFoundError`, which pages and the API answer with 404), so an
object of another team is indistinguishable from a missing one.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from apps.core.errors import NotFoundError

M = TypeVar("M", bound=Model)


def scoped(queryset: QuerySet[M], team: Any, *, team_field: str = "team") -> QuerySet[M]:
    if team is None:
        return queryset.none()
    return queryset.filter(**{team_field: team})


def get_scoped_or_404(
    queryset: QuerySet[M], team: Any, *, team_field: str = "team", **lookup: Any
) -> M:
    try:
        return scoped(queryset, team, team_field=team_field).get(**lookup)
    except (queryset.model.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFoundError(
            f"No {queryset.model._meta.verbose_name} matches the given query."
        ) from exc
