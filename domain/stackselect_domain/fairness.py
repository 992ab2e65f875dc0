"""The fair-comparison checklist (docs/domain.md section 5), judged from the run identities.

Each item is met, not met, or unknown (a fact nobody recorded). The plan page judges what the
plan will run; the evidence page and the decision record judge what was measured. A
comparison that misses an item says so instead of passing quietly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["met", "not_met", "unknown"]
ITEMS: tuple[tuple[str, str], ...] = (
    ("same_checkpoint", "same checkpoint and tokenizer"),
    ("same_precision", "same precision recipe"),
    ("same_requests", "same request set (seed and count)"),
    ("fixed_output_lengths", "ignore-EOS or fixed output lengths"),
    ("tuned_settings", "each engine tuned (recommended or swept settings)"),
    ("curves", "curves over load, not a single point"),
    ("quality_checked", "output quality checked"),
)
LABELS = dict(ITEMS)


@dataclass(frozen=True, slots=True)
class CandidateFacts:
    """What the checklist needs of one candidate: its identity and three facts beside it."""

    identity: Mapping[str, Any]
    load_points: int
    tuning_origin: str | None  # defaults, recommended, sweep; None: not recorded
    quality: str | None  # measured, simulated; None: no probe result


@dataclass(frozen=True, slots=True)
class Item:
    key: str
    status: Status
    detail: str

    @property
    def label(self) -> str:
        return LABELS[self.key]

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "status": self.status, "detail": self.detail}


def _field(identity: Mapping[str, Any], path: str) -> Any:
    value: Any = identity
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _same(candidates: Sequence[CandidateFacts], key: str, paths: Sequence[str]) -> Item:
    values = [tuple(_field(c.identity, path) for path in paths) for c in candidates]
    if any(value is None for row in values for value in row):
        return Item(key, "unknown", "not recorded for every candidate")
    distinct = sorted({_words(row) for row in values})
    if len(distinct) > 1:
        return Item(key, "not_met", "differs: " + " vs ".join(distinct))
    return Item(key, "met", _words(values[0]))


def _words(row: Sequence[Any]) -> str:
    """Identity values as people read them: a recipe's parts by name ("weights fp8, kv cache
    bf16"), not a Python mapping."""
    return "; ".join(_word(value) for value in row)


def _word(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{str(k).replace('_', ' ')} {_word(v)}" for k, v in value.items())
    return str(value)


def _every(candidates: Sequence[CandidateFacts], key: str, test: Any, describe: str) -> Item:
    verdicts = [test(c) for c in candidates]
    if any(verdict is False for verdict in verdicts):
        return Item(key, "not_met", f"{verdicts.count(False)} candidate(s) without {describe}")
    if any(verdict is None for verdict in verdicts):
        return Item(key, "unknown", f"not recorded for {verdicts.count(None)} candidate(s)")
    return Item(key, "met", f"every candidate has {describe}")


def _tuned(candidate: CandidateFacts) -> bool | None:
    if candidate.tuning_origin is None:
        return None
    return candidate.tuning_origin in ("recommended", "sweep")


def _quality(candidate: CandidateFacts) -> bool | None:
    if candidate.quality is None:
        return False
    return True if candidate.quality == "measured" else None


def checklist(candidates: Sequence[CandidateFacts]) -> list[Item]:
    """Every item for the candidates compared; with none, every item is unknown."""
    if not candidates:
        return [Item(key, "unknown", "nothing to compare yet") for key, _ in ITEMS]
    return [
        _same(candidates, "same_checkpoint", ("checkpoint", "tokenizer")),
        _same(candidates, "same_precision", ("precision",)),
        _same(candidates, "same_requests", ("arrival.seed", "arrival.request_count")),
        _every(
            candidates,
            "fixed_output_lengths",
            lambda c: _field(c.identity, "osl_distribution.ignore_eos"),
            "ignore-EOS",
        ),
        _every(candidates, "tuned_settings", _tuned, "tuned settings"),
        _every(candidates, "curves", lambda c: c.load_points >= 2, "two or more load points"),
        _every(candidates, "quality_checked", _quality, "a measured quality probe"),
    ]


def missed(items: Sequence[Item]) -> list[str]:
    """Labels of the items not met, for a decision's warning."""
    return [item.label for item in items if item.status == "not_met"]
