"""Each candidate's quality-probe score, its agreement with the reference, and the flag.

No Django. The scoring rule is the domain's (stackselect_domain/quality.py). A faster
candidate that scores below the reference by more than the goal's tolerance is "faster but
worse", a slower one "worse"; neither is ever called better. A simulated probe is shown as
simulated and never judged: the simulated engine does not answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stackselect_domain.quality import FLAG_WORDS, agreement, quality_flag

if TYPE_CHECKING:
    from apps.evidence.comparison import CandidateEvidence

SIMULATED = "simulated"


@dataclass(frozen=True)
class QualityJudgement:
    correct: int
    total: int
    mode: str
    agreement: float | None = None
    flag: str | None = None
    evaluations: tuple[Mapping[str, Any], ...] = ()

    @property
    def rate(self) -> float | None:
        return self.correct / self.total if self.total else None

    @property
    def flag_words(self) -> str | None:
        return FLAG_WORDS.get(self.flag) if self.flag else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "total": self.total,
            "rate": self.rate,
            "mode": self.mode,
            "agreement_with_reference": self.agreement,
            "flag": self.flag,
            "flag_words": self.flag_words,
            "evaluations": [dict(item) for item in self.evaluations],
        }


def _score(entry: CandidateEvidence) -> QualityJudgement | None:
    """Correct answers summed over the candidate's probed runs."""
    if not entry.quality:
        return None
    scores = [probe.get("score") or {} for probe in entry.quality]
    simulated = any(score.get("mode") == SIMULATED for score in scores)
    evaluations = tuple(probe["evaluation"] for probe in entry.quality if probe.get("evaluation"))
    return QualityJudgement(
        correct=sum(int(score.get("correct") or 0) for score in scores),
        total=sum(int(score.get("total") or 0) for score in scores),
        mode=SIMULATED if simulated else "measured",
        evaluations=evaluations,
    )


def _faster(entry: CandidateEvidence, reference: CandidateEvidence) -> bool:
    """A higher max rate under the SLO, or goodput judged better at some load point."""
    mine, theirs = entry.max_rate, reference.max_rate
    if mine and theirs and None not in (mine.rate_rps, theirs.rate_rps):
        return mine.rate_rps > theirs.rate_rps
    return any(point.cells["goodput_rps"].verdict == "better" for point in entry.points)


def _outputs(entry: CandidateEvidence) -> Sequence[Mapping[str, Any]]:
    return entry.quality[0].get("outputs") or [] if entry.quality else []


def judge_quality(
    entries: Sequence[CandidateEvidence], reference: CandidateEvidence, *, tolerance: float
) -> None:
    """Set each entry's judgement; only measured probes on both sides are flagged."""
    reference.judgement = _score(reference)
    theirs = reference.judgement
    for entry in entries:
        if entry is reference:
            continue
        mine = _score(entry)
        if mine is None:
            continue
        same = agreement(_outputs(entry), _outputs(reference)) if theirs else None
        flag = None
        if theirs is not None and SIMULATED not in (mine.mode, theirs.mode):
            flag = quality_flag(
                mine.rate, theirs.rate, tolerance=tolerance, faster=_faster(entry, reference)
            )
        entry.judgement = QualityJudgement(
            mine.correct, mine.total, mine.mode, same, flag, mine.evaluations
        )
