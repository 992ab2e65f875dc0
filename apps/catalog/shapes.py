"""Validators for the catalog's JSON columns, run by `full_clean` on every write (loader,
importer, pages, API), so a value of another shape is a field error, not a stored row that
every later candidate computation or figures page stumbles on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible

SOURCE_KEYS = ("source", "as_of", "note")


@deconstructible
class WordList:
    """A list of strings, each one of `allowed` when given."""

    def __init__(self, allowed: Iterable[str] | None = None) -> None:
        self.allowed = tuple(allowed) if allowed is not None else None

    def __call__(self, value: Any) -> None:
        if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
            raise ValidationError("Must be a list of strings.", code="invalid")
        unknown = [word for word in value if self.allowed is not None and word not in self.allowed]
        if unknown:
            raise ValidationError(
                f"Not one of {', '.join(self.allowed)}: {', '.join(unknown)}.",
                code="invalid_choice",
            )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WordList) and other.allowed == self.allowed


def figure_sources(value: Any) -> None:
    """{figure name: {"source", "as_of", "note"}} with string values, as the figures page reads."""
    if not isinstance(value, dict):
        raise ValidationError('Must be an object: {figure: {"source", "as_of", "note"}}.')
    for name, entry in value.items():
        if not isinstance(entry, dict) or not all(isinstance(text, str) for text in entry.values()):
            raise ValidationError(f"{name}: must be an object of strings.", code="invalid")
        extra = sorted(set(entry) - set(SOURCE_KEYS))
        if extra:
            raise ValidationError(f"{name}: takes only {', '.join(SOURCE_KEYS)}, not {extra}.")


TIER_KEYS = ("memory_gb_below", "accelerators", "max_num_batched_tokens", "max_num_seqs")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def budget_tier_list(value: Any) -> None:
    """[{"memory_gb_below" or "accelerators", "max_num_batched_tokens", "max_num_seqs"}]: the
    budgets an engine resolves from the GPU it starts on, first match winning; a tier names a
    memory bound (GB, exclusive) or accelerator slugs, and a budget (null: the release's)."""
    if not isinstance(value, list):
        raise ValidationError("Must be a list of tiers.", code="invalid")
    for index, tier in enumerate(value):
        where = f"tier {index + 1}"
        if not isinstance(tier, dict):
            raise ValidationError(f"{where}: must be an object.", code="invalid")
        extra = sorted(set(tier) - set(TIER_KEYS))
        if extra:
            raise ValidationError(f"{where}: takes only {', '.join(TIER_KEYS)}, not {extra}.")
        bound, slugs = tier.get("memory_gb_below"), tier.get("accelerators")
        if (bound is None) == (slugs is None):
            raise ValidationError(f"{where}: name memory_gb_below or accelerators, one of them.")
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, int | float) or bound <= 0
        ):
            raise ValidationError(f"{where}.memory_gb_below: must be a positive number.")
        if slugs is not None:
            WordList()(slugs)
        budgets = [tier.get(name) for name in ("max_num_batched_tokens", "max_num_seqs")]
        if all(budget is None for budget in budgets):
            raise ValidationError(f"{where}: give max_num_batched_tokens or max_num_seqs.")
        if not all(budget is None or _positive_int(budget) for budget in budgets):
            raise ValidationError(f"{where}: budgets must be whole numbers of at least 1.")
