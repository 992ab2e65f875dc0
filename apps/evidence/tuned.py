"""A candidate's tuning trials collapse into its best setting under the SLO.

No Django. Entries of one candidate whose identities differ only in the engine configuration
(the settings swept) are trials of one sweep; the one with the highest rate meeting the SLO is
kept (goodput breaks ties, stackselect_domain.tuning.best_trial) and carries every trial, so
the comparison between candidates uses each one's best and the page shows what was tried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stackselect_domain.identity import comparability
from stackselect_domain.ratesearch import MaxRate
from stackselect_domain.tuning import best_trial

if TYPE_CHECKING:
    from apps.evidence.comparison import CandidateEvidence

SWEPT_FIELDS = ("engine_config",)


@dataclass(frozen=True)
class Trial:
    """One setting tried for a candidate, what it reached, and whether it was kept."""

    key: str
    settings: Mapping[str, Any]
    # The same settings in the candidate's own engine knobs (empty for older jobs).
    engine_knobs: Mapping[str, Any]
    origin: str
    source: str | None
    max_rate: MaxRate | None
    goodput_rps: float | None
    kept: bool


def _rate(entry: CandidateEvidence) -> float | None:
    return entry.max_rate.rate_rps if entry.max_rate is not None else None


def _trial(entry: CandidateEvidence, kept: bool) -> Trial:
    tuning = entry.tuning or {}
    return Trial(
        key=entry.key,
        settings=dict(tuning.get("settings") or {}),
        engine_knobs=dict(tuning.get("engine_knobs") or {}),
        origin=str(tuning.get("origin") or "defaults"),
        source=tuning.get("source"),
        max_rate=entry.max_rate,
        goodput_rps=entry.best_goodput,
        kept=kept,
    )


def _sweeps(entries: Sequence[CandidateEvidence]) -> list[list[CandidateEvidence]]:
    """Trials of one candidate that differ only in what was swept, in first-seen order."""
    sweeps: list[list[CandidateEvidence]] = []
    for entry in entries:
        home = next(
            (
                sweep
                for sweep in sweeps
                if entry.tuning is not None
                and sweep[0].tuning is not None
                and sweep[0].candidate_id == entry.candidate_id
                and entry.candidate_id is not None
                and comparability(
                    entry.identity, sweep[0].identity, stack_fields=SWEPT_FIELDS
                ).comparable
            ),
            None,
        )
        if home is None:
            sweeps.append([entry])
        else:
            home.append(entry)
    return sweeps


def keep_best_trials(entries: Sequence[CandidateEvidence]) -> list[CandidateEvidence]:
    """One entry per sweep: the best trial, with every trial listed on it."""
    kept = []
    for sweep in _sweeps(entries):
        scores = [(_rate(entry), entry.best_goodput) for entry in sweep]
        index = best_trial(scores)
        if index is None:  # no setting met the SLO: the one with the most goodput stays
            index = max(range(len(sweep)), key=lambda i: (scores[i][1] or 0.0, -i))
        best = sweep[index]
        if best.tuning is not None:
            best.trials = [_trial(entry, entry is best) for entry in sweep]
        kept.append(best)
    return kept
