"""Reads of evidence, always scoped to the acting team: the page, the API, CSVs, calibration."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db.models import QuerySet
from stackselect_domain import fairness
from stackselect_domain.quality import DEFAULT_QUALITY_TOLERANCE
from stackselect_domain.slo import SLO

from apps.accounts.scoping import get_scoped_or_404, scoped
from apps.benchmarks.choices import AttemptState
from apps.benchmarks.models import QualityResult
from apps.evidence.calibration_report import (
    CalibrationReport,
    calibration_report,
    fitted,
    measurements_by_fit,
)
from apps.evidence.comparison import (
    CandidateEvidence,
    StoredResult,
    StoredRun,
    build_evidence,
)
from apps.evidence.models import EvidenceRun, LoadPointResult, Sample
from apps.evidence.sample_store import GAP_DTYPE, READ_COLUMNS
from apps.evidence.stored import summary_from_json
from apps.evidence.summaries import slo_of
from apps.selections.efficiency_fit import Measurement, TeamFit
from apps.selections.estimator import Efficiency
from apps.selections.models import Candidate, Selection

RESULT_FIELDS = ("run_id", "load_point", "summary", "quantiles")
# Goals whose measured runs one team fit reads: the goal being computed and the latest others.
TEAM_FIT_GOALS = 20
# An attempt that ended in one of these did not finish: whatever it uploaded is kept apart as
# superseded, never counted as a run (its job was retried, failed or cancelled).
UNFINISHED_ATTEMPT_STATES = (
    AttemptState.LOST,
    AttemptState.FAILED,
    AttemptState.CANCELLED,
    AttemptState.SUPERSEDED,
)


@dataclass(frozen=True)
class SupersededRun:
    """A run of an attempt that did not finish, with why, for the page to show apart."""

    run_id: int
    label: str
    attempt_number: int
    attempt_state: str
    reason: str


@dataclass(frozen=True)
class SelectionEvidence:
    selection: Selection
    slo: SLO | None
    candidates: list[CandidateEvidence]
    partial_load_points: int
    calibration: CalibrationReport
    superseded: list[SupersededRun] = field(default_factory=list)
    checklist: list[fairness.Item] = field(default_factory=list)
    quality_tolerance: float = DEFAULT_QUALITY_TOLERANCE


def _label(run: EvidenceRun) -> str:
    """`#rank engine version · N x accelerator · precision (tool)`: what people tell apart;
    a dry run says `simulated` in its label, so every table, chart and CSV says so too."""
    identity = run.identity
    precision = identity.get("precision")
    weights = precision.get("weights") if isinstance(precision, dict) else precision
    engine = " ".join(str(identity.get(key) or "") for key in ("engine", "engine_version"))
    hardware = f"{identity.get('gpu_count') or '?'} x {identity.get('accelerator') or '?'}"
    parts = [engine.strip() or "unknown engine", hardware, *([str(weights)] if weights else [])]
    if identity.get("simulated"):
        parts.append("simulated")
    rank = f"#{run.candidate.rank} " if run.candidate_id and run.candidate.rank else ""
    return f"{rank}{' · '.join(parts)} ({run.tool})"


def counted(runs: QuerySet[EvidenceRun]) -> QuerySet[EvidenceRun]:
    """Runs that count: imported ones, and those of attempts that finished or are running."""
    return runs.exclude(attempt__state__in=UNFINISHED_ATTEMPT_STATES)


def runs_of(*, team: Any, selection: Selection) -> QuerySet[EvidenceRun]:
    """The runs of a selection that count as evidence (see `counted`)."""
    runs = scoped(EvidenceRun.objects.filter(selection=selection), team)
    return counted(runs).select_related("candidate")


def superseded_runs_of(*, team: Any, selection: Selection) -> list[SupersededRun]:
    runs = scoped(EvidenceRun.objects.filter(selection=selection), team).filter(
        attempt__state__in=UNFINISHED_ATTEMPT_STATES
    )
    return [
        SupersededRun(
            run.pk, _label(run), run.attempt.number, run.attempt.state, run.attempt.reason
        )
        for run in runs.select_related("candidate", "attempt").order_by("pk")
    ]


def _probes(runs: list[EvidenceRun]) -> dict[int, dict[str, Any]]:
    """The quality probe of each run's attempt (one query), by attempt id."""
    attempt_ids = [run.attempt_id for run in runs if run.attempt_id]
    rows = QualityResult.objects.filter(attempt_id__in=attempt_ids)
    return {
        attempt_id: {"score": score, "outputs": outputs, "evaluation": evaluation}
        for attempt_id, score, outputs, evaluation in rows.values_list(
            "attempt_id", "score", "outputs", "evaluation"
        )
    }


def stored_runs(*, team: Any, selection: Selection) -> tuple[list[StoredRun], int]:
    """Every run of the selection with its complete load points, its job's tuning trial and
    its quality probe (four queries), and how many load points still wait for chunks."""
    runs = list(runs_of(team=team, selection=selection).select_related("job"))
    probes = _probes(runs)
    results: dict[int, list[StoredResult]] = {run.pk: [] for run in runs}
    partial = 0
    rows = LoadPointResult.objects.filter(run__in=[run.pk for run in runs])
    for run_id, load_point, summary, quantiles in rows.order_by("run_id", "index").values_list(
        *RESULT_FIELDS
    ):
        if summary is None:
            partial += 1
            continue
        results[run_id].append(StoredResult(load_point, summary_from_json(summary), quantiles))
    stored = [
        StoredRun(
            run_id=run.pk,
            label=_label(run),
            candidate_id=run.candidate_id,
            source=run.source,
            tool=run.tool,
            identity=run.identity,
            fingerprint=run.identity_fingerprint,
            gpu_count=run.gpu_count,
            results=results[run.pk],
            tuning=(run.job.tuning or None) if run.job_id else None,
            quality=probes.get(run.attempt_id) if run.attempt_id else None,
        )
        for run in runs
    ]
    return stored, partial


def selection_evidence(
    *, team: Any, selection_id: int, reference: str | None = None
) -> SelectionEvidence:
    """Candidates x metrics at each load point, comparability, calibration: a fixed number of
    queries whatever the number of runs."""
    selection = get_scoped_or_404(Selection.objects.select_related("model"), team, pk=selection_id)
    runs, partial = stored_runs(team=team, selection=selection)
    slo = slo_of(selection.slo)
    tolerance = quality_tolerance_of(selection)
    evidence = build_evidence(runs, reference_key=reference, quality_tolerance=tolerance)
    report = _calibration(selection, runs)
    superseded = superseded_runs_of(team=team, selection=selection)
    checklist = fairness.checklist([candidate_facts(entry) for entry in evidence])
    return SelectionEvidence(
        selection, slo, evidence, partial, report, superseded, checklist, tolerance
    )


@dataclass(frozen=True)
class CalibrationInputs:
    """What a selection's calibration reads: its comparable measured evidence (never simulated
    runs) and the candidates that evidence names."""

    selection: Selection
    evidence: list[CandidateEvidence]
    candidates: dict[int, Candidate]


def _calibration_inputs(selection: Selection, runs: Sequence[StoredRun]) -> CalibrationInputs:
    measured = build_evidence([run for run in runs if not run.identity.get("simulated")])
    candidate_ids = {entry.candidate_id for entry in measured if entry.candidate_id}
    candidates = Candidate.objects.filter(selection=selection, pk__in=candidate_ids)
    by_id = {
        candidate.pk: candidate for candidate in candidates.select_related("accelerator", "release")
    }
    return CalibrationInputs(selection, measured, by_id)


def _calibration(selection: Selection, runs: Sequence[StoredRun]) -> CalibrationReport:
    """The calibration of the selection's measured and imported runs (never simulated ones),
    judged against a measured reference."""
    inputs = _calibration_inputs(selection, runs)
    return calibration_report(selection, inputs.evidence, inputs.candidates)


def quality_tolerance_of(selection: Selection) -> float:
    """The goal's quality tolerance (constraints), the domain's default when it sets none."""
    value = (selection.constraints or {}).get("quality_tolerance")
    return DEFAULT_QUALITY_TOLERANCE if value is None else float(value)


def candidate_facts(entry: CandidateEvidence) -> fairness.CandidateFacts:
    """What the fair-comparison checklist reads of one compared candidate."""
    judgement = entry.judgement
    return fairness.CandidateFacts(
        identity=entry.identity,
        load_points=len(entry.points),
        # A candidate kept from a sweep was tuned, whichever setting won.
        tuning_origin="sweep"
        if len(entry.trials) > 1
        else (str(entry.tuning.get("origin")) if entry.tuning else None),
        quality=judgement.mode if judgement is not None else None,
    )


def _measured_goals(selection: Selection) -> list[Selection]:
    """The team's goals with counted runs and a catalog model: this one first, then the most
    recently changed others, TEAM_FIT_GOALS in all at most."""
    measured = counted(scoped(EvidenceRun.objects.all(), selection.team)).values("selection_id")
    goals = Selection.objects.filter(
        team=selection.team, pk__in=measured, model__isnull=False
    ).select_related("model", "team")
    own = list(goals.filter(pk=selection.pk))
    others = goals.exclude(pk=selection.pk).order_by("-updated_at", "-pk")
    return own + list(others[: TEAM_FIT_GOALS - len(own)])


def team_factors(*, selection: Selection) -> dict[tuple[str, str], TeamFit]:
    """The roofline's efficiency factors refitted per (accelerator, engine) on the team's
    measured runs of this goal and its other goals (the factors describe an engine on a GPU,
    whichever model a run served, so a team measures once for every later goal), with the load
    points and goals each fit saw and the refitted estimate's error on each metric of them
    (in-sample); none where nothing was measured."""
    sources = []
    for goal in _measured_goals(selection):
        runs, _ = stored_runs(team=goal.team, selection=goal)
        sources.append(_calibration_inputs(goal, runs))
    grouped: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    goals: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source in sources:
        found = measurements_by_fit(source.selection, source.evidence, source.candidates)
        for key, measurements in found.items():
            if measurements:
                grouped[key].extend(measurements)
                goals[key].append(f"{source.selection.title} #{source.selection.pk}")
    fits = fitted(grouped)
    errors: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for source in sources:
        report = calibration_report(
            source.selection, source.evidence, source.candidates, found=fits
        )
        for measured in report.errors:
            for row in measured.rows:
                if row["calibrated_error"] is not None:
                    errors[measured.fit_key][str(row["metric"])].append(row["calibrated_error"])
    return {
        (fit.accelerator, fit.engine): TeamFit(
            efficiency=replace(Efficiency(), compute=fit.compute, bandwidth=fit.bandwidth),
            measurements=fit.measurements,
            errors=dict(errors[(fit.accelerator, fit.engine)]),
            goals=tuple(goals[(fit.accelerator, fit.engine)]),
        )
        for fit in fits
    }


def measured_by_candidate(*, candidates: Iterable[Candidate]) -> dict[int, list[dict[str, Any]]]:
    """Predicted-versus-measured rows per candidate id, the shape `measured_for` returns.

    Candidates of one page share a selection; the evidence is read once per selection.
    """
    wanted = {candidate.pk: candidate for candidate in candidates}
    rows: dict[int, list[dict[str, Any]]] = {}
    for selection_id in {candidate.selection_id for candidate in wanted.values()}:
        selection = Selection.objects.select_related("model", "team").get(pk=selection_id)
        if not runs_of(team=selection.team, selection=selection).exists():
            continue  # nothing measured yet: no need to build the whole evidence
        report = selection_evidence(team=selection.team, selection_id=selection_id).calibration
        for error in report.errors:
            if error.candidate_id in wanted:
                rows[error.candidate_id] = error.rows
    return rows


SAMPLE_CSV_COLUMNS = ("run_id", "load_point_index", *READ_COLUMNS)
GAPS_COLUMN = SAMPLE_CSV_COLUMNS.index("itl_s")


def _gaps_text(packed: bytes | memoryview | None) -> str:
    if packed is None:
        return ""
    return " ".join(repr(float(gap)) for gap in np.frombuffer(bytes(packed), dtype=GAP_DTYPE))


def sample_rows(*, team: Any, selection: Selection) -> Iterator[list[Any]]:
    """Every sample of the selection's runs, streamed in chunks (the CSV download)."""
    samples = Sample.objects.filter(
        result__run__in=runs_of(team=team, selection=selection).values("pk")
    ).order_by("result__run_id", "result__index", "index")
    fields = ("result__run_id", "result__index", *READ_COLUMNS)
    for row in samples.values_list(*fields).iterator(chunk_size=5000):
        values = list(row)
        values[GAPS_COLUMN] = _gaps_text(values[GAPS_COLUMN])
        yield values


def summary_rows(evidence: SelectionEvidence, metric_names: Iterable[str]) -> Iterator[list[Any]]:
    """One row per candidate and load point: identity status, runs, then every metric."""
    names = list(metric_names)
    for entry in evidence.candidates:
        for point in entry.points:
            yield [
                entry.label,
                entry.key,
                entry.status,
                " ".join(entry.differing),
                point.key,
                point.runs,
                *[point.value(name) for name in names],
            ]


def load_point_results_of_job(*, job: Any) -> QuerySet[LoadPointResult]:
    """The analysed load points a benchmark job produced (summaries appear once complete)."""
    return LoadPointResult.objects.filter(run__job=job).order_by("run_id", "index")
