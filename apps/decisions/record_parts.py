"""The goal, candidates and evidence parts of a record, snapshotted from the database.

These are reads: the service stores what they return, so a record says what was true when it
was written even after the selection, the catalog or the evidence change.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from django.core.exceptions import ValidationError
from stackselect_domain import fairness
from stackselect_domain.steptime import NATURE_SIMULATED

from apps.benchmarks.engine_spec import model_identity
from apps.catalog.models import Capability
from apps.decisions.export import stack_text
from apps.evidence.models import EvidenceRun, LoadPointResult
from apps.evidence.selectors import (
    candidate_facts,
    counted,
    measured_by_candidate,
    selection_evidence,
)
from apps.selections.choices import CandidateOutcome
from apps.selections.models import Candidate, Selection
from apps.selections.selectors import SimulatedShare, simulated_comparison

# Candidates are keyed A, B, C... in the record, as options are in a decision record.
CANDIDATE_KEYS = string.ascii_uppercase
MAX_CANDIDATES = len(CANDIDATE_KEYS)
# Candidates taken when none are chosen for benchmarking: the best few kept ones.
DEFAULT_KEPT = 5
SUMMARY_FIGURES = ("request_throughput_rps", "goodput_rps", "slo_attainment", "errors", "requests")
LATENCY_FIGURES = ("ttft_s", "tpot_s")


def goal_part(selection: Selection) -> dict[str, Any]:
    constraints = dict(selection.constraints or {})
    return {
        "selection_id": selection.pk,
        "selection_title": selection.title,
        "model": model_identity(selection.model, selection.custom_model),
        "workload": selection.workload,
        "slo": selection.slo,
        "capacity": {
            "accelerators": constraints.get("accelerators") or [],
            "max_gpus": constraints.get("max_gpus"),
            "prices": constraints.get("prices") or {},
        },
        "operational": {
            "needs": constraints.get("operational") or [],
            "required_features": constraints.get("required_features") or [],
        },
    }


def record_candidates(selection: Selection, candidate_ids: Sequence[int] = ()) -> list[Candidate]:
    """The given candidates, else the ones chosen for benchmarking, else the best kept ones."""
    rows = Candidate.objects.filter(selection=selection).select_related(
        "release__engine", "backend", "accelerator"
    )
    if candidate_ids:
        found = list(rows.filter(pk__in=candidate_ids).order_by("rank", "pk"))
        missing = sorted(set(candidate_ids) - {candidate.pk for candidate in found})
        if missing:
            raise ValidationError({"candidates": f"Not candidates of this selection: {missing}."})
    else:
        found = list(rows.filter(chosen=True).order_by("rank", "pk")) or list(
            rows.filter(outcome=CandidateOutcome.KEPT).order_by("rank", "pk")[:DEFAULT_KEPT]
        )
    if not found:
        raise ValidationError({"candidates": "The selection has no kept candidates yet."})
    if len(found) > MAX_CANDIDATES:
        raise ValidationError({"candidates": f"A record compares at most {MAX_CANDIDATES}."})
    return found


def _cell(cell: Capability) -> dict[str, Any]:
    return {
        "id": cell.pk,
        "feature": cell.feature.key,
        "maturity": cell.maturity,
        "release": str(cell.release),
        "backend": cell.backend.slug if cell.backend else None,
        "vendor": cell.vendor,
        "family": cell.family,
        "as_of": cell.as_of.isoformat(),
        "evidence_url": cell.evidence_url,
    }


def _estimate(candidate: Candidate, share: SimulatedShare | None) -> dict[str, Any]:
    """The figures the candidate page showed, and for an analytic row how this goal's simulated
    replicas read against their own analytic goodput (the analytic estimate queues nothing)."""
    estimate = candidate.estimate or {}
    latency = estimate.get("latency") or {}
    analytic = estimate.get("comparison") != NATURE_SIMULATED
    return {
        "goodput_per_gpu_rps": estimate.get("goodput_per_gpu_rps"),
        "goodput_method": estimate.get("label"),
        "gpus_for_peak": estimate.get("gpus_for_peak"),
        "gpus_for_clients": estimate.get("gpus_for_clients"),
        "ttft_ms": latency.get("ttft_ms"),
        "tpot_ms": latency.get("tpot_ms"),
        "latency_method": latency.get("label"),
        "latency_in_flight": latency.get("concurrency"),
        "replicas": (candidate.stack or {}).get("dp") or 1,
        "error_band": estimate.get("error_band"),
        "simulated_share": asdict(share) if analytic and share else None,
    }


def candidates_part(selection: Selection, candidates: Sequence[Candidate]) -> list[dict[str, Any]]:
    share = simulated_comparison(selection=selection).share
    cell_ids = {cell_id for candidate in candidates for cell_id in candidate.capability_ids}
    cells = {
        cell.pk: _cell(cell)
        for cell in Capability.objects.filter(pk__in=cell_ids).select_related(
            "feature", "backend", "release__engine"
        )
    }
    return [
        {
            "key": key,
            "candidate_id": candidate.pk,
            "rank": candidate.rank,
            "outcome": candidate.outcome,
            "label": stack_text(candidate.stack),
            "stack": candidate.stack,
            "release": {
                "id": candidate.release_id,
                "engine": candidate.release.engine.slug,
                "version": candidate.release.version,
            },
            "backend": candidate.backend.slug if candidate.backend else None,
            "accelerator": {
                "slug": candidate.accelerator.slug,
                "name": candidate.accelerator.name,
                "vendor": candidate.accelerator.vendor,
            },
            "capabilities": [cells[i] for i in sorted(candidate.capability_ids) if i in cells],
            "estimate": _estimate(candidate, share),
        }
        for key, candidate in zip(CANDIDATE_KEYS, candidates, strict=False)
    ]


def _figures(summary: Mapping[str, Any] | None) -> dict[str, Any]:
    if not summary:
        return {}
    figures = {name: summary.get(name) for name in SUMMARY_FIGURES}
    for name in LATENCY_FIGURES:
        distribution = summary.get(name) or {}
        figures[f"{name[:-2]}_p50_ms"] = _ms(distribution.get("p50"))
        figures[f"{name[:-2]}_p99_ms"] = _ms(distribution.get("p99"))
    return figures


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def _runner(run: EvidenceRun) -> dict[str, Any] | None:
    runner = run.attempt.runner if run.attempt_id and run.attempt else None
    return None if runner is None else {"id": runner.pk, "name": runner.name}


def evidence_part(
    selection: Selection, candidates: Sequence[Candidate], keys: Mapping[int, str]
) -> list[dict[str, Any]]:
    """Every run of the record's candidates, with its fingerprint, checksums and figures, and
    the estimate against the measurement where both exist."""
    runs = list(
        counted(EvidenceRun.objects.filter(selection=selection, candidate__in=list(candidates)))
        .select_related("attempt__runner", "job__plan")
        .order_by("pk")
    )
    results: dict[int, list[dict[str, Any]]] = {run.pk: [] for run in runs}
    for result in LoadPointResult.objects.filter(run__in=runs).order_by("run_id", "index"):
        results[result.run_id].append(
            {"index": result.index, "load_point": result.load_point, **_figures(result.summary)}
        )
    compared = measured_by_candidate(candidates=candidates) if runs else {}
    return [
        {
            "run_id": run.pk,
            "candidate_key": keys[run.candidate_id],
            "source": run.source,
            "mode": run.mode,
            "tool": run.tool,
            "tool_version": run.tool_version,
            "identity_fingerprint": run.identity_fingerprint,
            "plan_id": run.job.plan_id if run.job_id else None,
            "runner": _runner(run),
            "raw_checksums": run.raw_checksums,
            "load_points": results[run.pk],
            "predicted_vs_measured": compared.get(run.candidate_id, []),
        }
        for run in runs
    ]


def _quality_row(entry: Any, key: str) -> dict[str, Any]:
    judgement = entry.judgement.as_dict() if entry.judgement else None
    return {
        "candidate_key": key,
        "comparability": entry.status,
        "tuning": dict(entry.tuning) if entry.tuning else None,
        "trials": len(entry.trials),
        "quality": judgement,
    }


def comparison_part(selection: Selection, keys: Mapping[int, str]) -> dict[str, Any]:
    """Each candidate's quality verdict against the reference, and the fair-comparison
    checklist of the record's candidates, as the evidence page shows them now."""
    evidence = selection_evidence(team=selection.team, selection_id=selection.pk)
    entries = [entry for entry in evidence.candidates if entry.candidate_id in keys]
    if not entries:
        return {}
    checklist = fairness.checklist([candidate_facts(entry) for entry in entries])
    reference = evidence.candidates[0]
    return {
        "reference_key": keys.get(reference.candidate_id) if reference in entries else None,
        "quality_tolerance": evidence.quality_tolerance,
        "candidates": [_quality_row(entry, keys[entry.candidate_id]) for entry in entries],
        "checklist": [item.as_dict() for item in checklist],
        "missed": fairness.missed(checklist),
    }


def snapshot_parts(selection: Selection, candidate_ids: Sequence[int] = ()) -> dict[str, Any]:
    """goal, candidates, evidence and the comparison's verdicts of a record about `selection`."""
    candidates = record_candidates(selection, candidate_ids)
    candidate_rows = candidates_part(selection, candidates)
    keys = {row["candidate_id"]: row["key"] for row in candidate_rows}
    return {
        "goal": goal_part(selection),
        "candidates": candidate_rows,
        "evidence": evidence_part(selection, candidates, keys),
        "comparison": comparison_part(selection, keys),
    }
