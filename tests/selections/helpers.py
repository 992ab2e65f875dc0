"""Small builders shared by the selections tests."""

from __future__ import annotations

from typing import Any

from apps.selections import services
from apps.selections.api.serializers import SelectionInputSerializer
from apps.selections.models import Selection


def create_selection(*, user: Any, team: Any, payload: dict[str, Any]) -> Selection:
    """Validate a goal document the way the API does (for the user's team) and store it."""
    document = SelectionInputSerializer(data=payload, context={"team": team})
    document.is_valid(raise_exception=True)
    return services.selection_create(actor_user=user, team=team, data=document.validated_data)


def update_selection(*, user: Any, selection: Selection, payload: dict[str, Any]) -> Selection:
    """Replace the goal the way the API's PUT does."""
    document = SelectionInputSerializer(data=payload, context={"team": selection.team})
    document.is_valid(raise_exception=True)
    return services.selection_update(
        actor_user=user, selection=selection, data=document.validated_data
    )
