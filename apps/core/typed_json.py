"""JSON bodies are typed as the schema says. DRF reads every input as a form, where "5" is an
integer, 0 a string and "yes" true; in a JSON body (not a form or query string, whose values
are all strings) a string where the schema says number or boolean, or a number where it says
string, is refused like any invalid value (400 naming the field). Installed once at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


ACCEPTS: dict[type[serializers.Field], Callable[[Any], bool]] = {
    serializers.CharField: lambda value: isinstance(value, str),
    serializers.IntegerField: lambda value: isinstance(value, int) and not isinstance(value, bool),
    serializers.FloatField: _number,
    serializers.DecimalField: _number,
    serializers.BooleanField: lambda value: isinstance(value, bool),
}


def _from_form(field: serializers.Field) -> bool:
    """The input is a form or query string (a QueryDict): every value in it is a string."""
    return hasattr(getattr(field.root, "initial_data", None), "getlist")


def _typed(original: Callable, accepts: Callable[[Any], bool]) -> Callable:
    def to_internal_value(self: serializers.Field, data: Any) -> Any:
        if not accepts(data) and not _from_form(self):
            self.fail("invalid")
        return original(self, data)

    to_internal_value.typed = True  # type: ignore[attr-defined]
    return to_internal_value


def install() -> None:
    for field_class, accepts in ACCEPTS.items():
        original = field_class.to_internal_value
        if not getattr(original, "typed", False):
            field_class.to_internal_value = _typed(original, accepts)
