"""Page numbers for every API list: a malformed page is a 400 naming `page`, not DRF's 404."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination

MAX_PAGE = 1_000_000  # far past any list, and the offset stays within a bigint


def whole_number(value: str | None, *, name: str, default: int, highest: int) -> int:
    """A query parameter that must be a whole number from 1 to `highest` (ASCII digits only:
    `str.isdigit` also accepts '²', which `int` refuses)."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= 7 and 1 <= int(value) <= highest):
        raise ValidationError({name: [f"Must be a whole number from 1 to {highest}."]})
    return int(value)


class CheckedPageNumberPagination(PageNumberPagination):
    """DRF's page-number pagination; a page past the last one is still a 404."""

    def get_page_number(self, request: Any, paginator: Any) -> int:
        value = request.query_params.get(self.page_query_param)
        return whole_number(value, name=self.page_query_param, default=1, highest=MAX_PAGE)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"].update(minimum=1, maximum=MAX_PAGE)
        return parameters
