"""The evidence app's reactions to the benchmarks app's signals (connected in apps.py)."""

from __future__ import annotations

from typing import Any

from apps.benchmarks.models import BenchmarkJob, ResultUpload
from apps.benchmarks.results import UploadError
from apps.benchmarks.signals import job_results_wanted, result_uploaded
from apps.evidence.ingest import ingest_upload
from apps.evidence.models import LoadPointResult
from apps.evidence.schema import UploadError as SamplesError
from apps.evidence.selectors import load_point_results_of_job, measured_by_candidate, team_factors
from apps.selections.estimator import Efficiency
from apps.selections.models import Candidate, Selection
from apps.selections.signals import measurements_wanted, team_factors_wanted


def _ingest(sender: Any, *, upload: ResultUpload, document: dict[str, Any], **_: Any) -> None:
    """Samples go into the evidence tables in the upload's transaction: all stored, or none."""
    try:
        ingest_upload(upload=upload, body=document)
    except SamplesError as error:
        raise UploadError(str(error)) from error


def _measurements(
    sender: Any, *, candidates: list[Candidate], **_: Any
) -> dict[int, list[dict[str, Any]]]:
    return measured_by_candidate(candidates=candidates)


def _team_factors(
    sender: Any, *, selection: Selection, **_: Any
) -> dict[tuple[str, str], Efficiency]:
    return team_factors(selection=selection)


def _job_results(sender: Any, *, job: BenchmarkJob, **_: Any) -> list[LoadPointResult]:
    return list(load_point_results_of_job(job=job))


def connect() -> None:
    job_results_wanted.connect(_job_results, sender=BenchmarkJob, dispatch_uid="evidence.job")
    result_uploaded.connect(_ingest, sender=ResultUpload, dispatch_uid="evidence.ingest")
    measurements_wanted.connect(
        _measurements, sender=Candidate, dispatch_uid="evidence.measurements"
    )
    team_factors_wanted.connect(
        _team_factors, sender=Selection, dispatch_uid="evidence.team_factors"
    )
