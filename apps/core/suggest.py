"""The known name a mistyped one most likely meant, for error messages that say what to type."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from rest_framework import serializers

# How alike (difflib's ratio) a name must be to a known one to be offered as meant.
MIN_LIKENESS = 0.75


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """' Did you mean 'x'?' for the known name nearest `value`, or '' when none is near.

    A different case, a name missing its suffix (h200 for h200-sxm) and a small slip
    (llama-3-8b for llama-3.1-8b) all find their name.
    """
    by_lower = {name.lower(): name for name in known}
    word = value.strip().lower()
    prefixed = sorted(name for name in by_lower if name.startswith(f"{word}-"))
    close = difflib.get_close_matches(word, list(by_lower), n=1, cutoff=MIN_LIKENESS)
    match = by_lower.get(word) or (prefixed[:1] or close or [None])[0]
    if match is None:
        return ""
    return f" Did you mean {by_lower[match]!r}?"


class WordChoiceField(serializers.ChoiceField):
    """A choice of words whose error lists the words it takes and the one a slip likely meant
    (DRF's own says only that the value is not a valid choice)."""

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            words = [str(choice) for choice in self.choices]
            hint = did_you_mean(str(data), words)
            raise serializers.ValidationError(
                f"{str(data)!r} is not one of: {', '.join(words)}.{hint}"
            ) from None
