"""The evidence API's shapes: the selection's evidence (read) and a tool import (write)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rest_framework import serializers

from apps.benchmarks.choices import RunMode
from apps.evidence.calibration_report import CalibrationReport
from apps.evidence.comparison import METRIC_NAMES, CandidateEvidence, Cell, PointEvidence
from apps.evidence.definitions import DEFINITIONS
from apps.evidence.models import EvidenceRun
from apps.evidence.selectors import SelectionEvidence
from apps.evidence.tool_files import TOOLS


def _cell(cell: Cell) -> dict[str, Any]:
    interval = cell.interval
    return {
        "interval": None
        if interval is None
        else {"low": interval.low, "high": interval.high, "runs": interval.runs},
        "verdict": cell.verdict,
    }


def _point(point: PointEvidence) -> dict[str, Any]:
    return {
        "key": point.key,
        "load_point": point.load_point,
        "offered_rate_rps": point.offered_rate_rps,
        "runs": point.runs,
        "metrics": {name: point.value(name) for name in METRIC_NAMES},
        "missing": point.missing,
        "statistics": {name: _cell(point.cells[name]) for name in METRIC_NAMES},
        "isl_off_target": point.isl_off_target,
        "osl_off_target": point.osl_off_target,
        "error_share": point.error_share,
        "error_budget": point.error_budget,
        "over_error_budget": point.over_error_budget,
    }


def _candidate(entry: CandidateEvidence) -> dict[str, Any]:
    max_rate = entry.max_rate
    return {
        "key": entry.key,
        "label": entry.label,
        "candidate_id": entry.candidate_id,
        "mode": entry.mode,
        "sources": entry.sources,
        "tools": entry.tools,
        "runs": entry.run_ids,
        "gpu_count": entry.gpu_count,
        "identity": entry.identity,
        "comparability": {"status": entry.status, "differing": list(entry.differing)},
        "max_rate": None
        if max_rate is None
        else {"rate_rps": max_rate.rate_rps, "bound": max_rate.bound},
        "load_points": [_point(point) for point in entry.points],
    }


def _calibration(report: CalibrationReport) -> dict[str, Any]:
    return {
        "fits": [asdict(fit) for fit in report.fits],
        "errors": [asdict(error) for error in report.errors],
    }


def evidence_body(evidence: SelectionEvidence) -> dict[str, Any]:
    """The JSON of GET /api/v1/selections/{id}/evidence/; null always means not measured."""
    selection = evidence.selection
    return {
        "selection": {"id": selection.pk, "title": selection.title},
        "slo": selection.slo,
        "definitions": DEFINITIONS,
        "reference": evidence.candidates[0].key if evidence.candidates else None,
        "partial_load_points": evidence.partial_load_points,
        "candidates": [_candidate(entry) for entry in evidence.candidates],
        "calibration": _calibration(evidence.calibration),
        "superseded": [asdict(run) for run in evidence.superseded],
    }


class _IntervalOut(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()
    runs = serializers.IntegerField()


class _StatisticOut(serializers.Serializer):
    interval = _IntervalOut(allow_null=True)
    verdict = serializers.ChoiceField(
        choices=["better", "worse", "indistinguishable", "missing"], allow_null=True
    )


ERROR_SHARE_HELP = "Failed requests over all sent, the mean over runs."
ERROR_BUDGET_HELP = (
    "The plan's max_error_rate that over_error_budget is judged against. null: the run states "
    "no failure policy (imported)."
)
OVER_BUDGET_HELP = (
    "Above the plan's max_error_rate: the latency figures describe only the requests that "
    "completed. null: the run states no failure policy (imported)."
)


class _PointOut(serializers.Serializer):
    key = serializers.CharField()
    load_point = serializers.JSONField()
    offered_rate_rps = serializers.FloatField()
    runs = serializers.IntegerField()
    metrics = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="null: not measured (missing)."
    )
    missing = serializers.ListField(child=serializers.CharField())
    statistics = serializers.DictField(child=_StatisticOut())
    isl_off_target = serializers.BooleanField(allow_null=True)
    osl_off_target = serializers.BooleanField(allow_null=True)
    error_share = serializers.FloatField(allow_null=True, help_text=ERROR_SHARE_HELP)
    error_budget = serializers.FloatField(allow_null=True, help_text=ERROR_BUDGET_HELP)
    over_error_budget = serializers.BooleanField(allow_null=True, help_text=OVER_BUDGET_HELP)


class _ComparabilityOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["reference", "comparable", "not_comparable"])
    differing = serializers.ListField(child=serializers.CharField())


class _MaxRateOut(serializers.Serializer):
    rate_rps = serializers.FloatField(allow_null=True)
    bound = serializers.CharField()


class _CandidateOut(serializers.Serializer):
    key = serializers.CharField(help_text="The identity fingerprint (sha256).")
    label = serializers.CharField()
    candidate_id = serializers.IntegerField(allow_null=True)
    mode = serializers.ChoiceField(
        choices=RunMode.choices, help_text="simulated: a dry run on the simulator."
    )
    sources = serializers.ListField(child=serializers.CharField())
    tools = serializers.ListField(child=serializers.CharField())
    runs = serializers.ListField(child=serializers.IntegerField())
    gpu_count = serializers.IntegerField(allow_null=True)
    identity = serializers.JSONField()
    comparability = _ComparabilityOut()
    max_rate = _MaxRateOut(allow_null=True)
    load_points = _PointOut(many=True)


class EvidenceOut(serializers.Serializer):
    selection = serializers.JSONField()
    slo = serializers.JSONField()
    definitions = serializers.DictField(child=serializers.CharField())
    reference = serializers.CharField(allow_null=True)
    partial_load_points = serializers.IntegerField()
    candidates = _CandidateOut(many=True)
    calibration = serializers.JSONField()
    superseded = serializers.ListField(
        child=serializers.JSONField(),
        help_text="Runs of attempts that did not finish: kept apart, never counted as runs.",
    )


class ImportIn(serializers.Serializer):
    """Multipart: the tool, its files by role, and what the files do not state."""

    selection = serializers.IntegerField()
    tool = serializers.ChoiceField(choices=sorted(TOOLS))
    candidate = serializers.IntegerField(required=False, allow_null=True)
    identity = serializers.JSONField(
        required=False,
        binary=True,
        help_text="Identity fields the files do not state (JSON object).",
    )
    tool_version = serializers.CharField(required=False, allow_blank=True, max_length=100)
    rate_rps = serializers.FloatField(required=False, allow_null=True, min_value=0)
    concurrency = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    result = serializers.FileField(required=False, help_text="vllm: the saved result JSON.")
    report = serializers.FileField(required=False, help_text="guidellm: benchmarks.json.")
    summary = serializers.FileField(
        required=False,
        help_text="aiperf: profile_export_aiperf.json; "
        "inference_perf: summary_lifecycle_metrics.json.",
    )
    records = serializers.FileField(required=False, help_text="aiperf: profile_export.jsonl.")
    per_request = serializers.FileField(
        required=False, help_text="inference_perf: per_request_lifecycle_metrics.json."
    )

    def validate_identity(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


FILE_ROLES = ("result", "report", "summary", "records", "per_request")


class RunOut(serializers.ModelSerializer):
    mode = serializers.ChoiceField(
        choices=RunMode.choices,
        read_only=True,
        help_text="simulated: a dry run on the simulated engine; no real engine ran.",
    )

    class Meta:
        model = EvidenceRun
        fields = [
            "id",
            "selection",
            "candidate",
            "source",
            "mode",
            "tool",
            "tool_version",
            "identity",
            "identity_fingerprint",
            "gpu_count",
            "raw_checksums",
            "notes",
            "created_at",
        ]
