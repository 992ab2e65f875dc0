"""Plotly figures of the evidence, built in Python and handed to the page as JSON.

plotly.js is served once as a static file (selections/_plotly.html loads it and draws every
`figure-*` script). A candidate that is not comparable keeps its line, marked in its name, and
a dry run's line says it ran on the simulated engine, so no chart passes it off as measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stackselect_domain.slo import SLO

from apps.core.figures import axes_layout, figure_json, horizontal_line
from apps.evidence.calibration_report import PredictionError
from apps.evidence.comparison import CandidateEvidence, PointEvidence
from apps.evidence.stored import SKETCH_PERCENTILES

_LAYOUT = {
    "margin": {"l": 55, "r": 20, "t": 40, "b": 45},
    "height": 360,
    "legend": {"orientation": "h", "y": -0.25},
}
RATE_AXIS = "offered rate (requests/s)"


def _name(candidate: CandidateEvidence) -> str:
    name = f"{candidate.label} (simulated)" if candidate.simulated else candidate.label
    return name if candidate.comparable else f"{name} (not comparable)"


def _scatter(
    x: list[Any], y: list[Any], name: str, *, mode: str = "lines+markers", **more: Any
) -> dict[str, Any]:
    return {"type": "scatter", "x": x, "y": y, "mode": mode, "name": name, **more}


def _line(
    candidate: CandidateEvidence, metric: str, *, suffix: str = "", dash: str = "solid"
) -> dict[str, Any]:
    points = [point for point in candidate.points if point.value(metric) is not None]
    return _scatter(
        [point.offered_rate_rps for point in points],
        [point.value(metric) for point in points],
        f"{_name(candidate)}{suffix}",
        line={"dash": dash},
    )


def latency_chart(candidates: Sequence[CandidateEvidence], *, latency: str, slo: SLO | None) -> str:
    """P50 (solid) and P99 (dashed) of `latency` ("ttft" or "tpot") against the offered rate,
    with the SLO target as a horizontal line."""
    traces = []
    for candidate in candidates:
        traces.append(_line(candidate, f"{latency}_p50_ms", suffix=" P50"))
        traces.append(_line(candidate, f"{latency}_p99_ms", suffix=" P99", dash="dash"))
    layout = axes_layout(
        title=f"{latency.upper()} percentiles against load",
        x=RATE_AXIS,
        y=f"{latency.upper()} (ms)",
        **_LAYOUT,
    )
    target = getattr(slo, f"{latency}_ms", None) if slo else None
    if target:
        horizontal_line(layout, y=target, label="SLO")
    return figure_json(traces, layout)


def goodput_chart(candidates: Sequence[CandidateEvidence]) -> str:
    layout = axes_layout(
        title="SLO goodput against load",
        x=RATE_AXIS,
        y="goodput (requests/s meeting every target)",
        **_LAYOUT,
    )
    return figure_json([_line(candidate, "goodput_rps") for candidate in candidates], layout)


def pareto_chart(candidates: Sequence[CandidateEvidence]) -> str:
    """Throughput per GPU against speed per user, one point per load point: up and right wins."""
    traces = []
    for candidate in candidates:
        points = [
            point
            for point in candidate.points
            if point.value("output_tokens_per_s_per_gpu") is not None
            and point.value("output_tokens_per_s_per_user") is not None
        ]
        traces.append(
            _scatter(
                [point.value("output_tokens_per_s_per_user") for point in points],
                [point.value("output_tokens_per_s_per_gpu") for point in points],
                _name(candidate),
                text=[point.key for point in points],
            )
        )
    layout = axes_layout(
        title="Tokens/s per GPU against tokens/s per user",
        x="output tokens/s per user (1 / TPOT)",
        y="output tokens/s per GPU",
        **_LAYOUT,
    )
    return figure_json(traces, layout)


def _cdf_point(candidate: CandidateEvidence, metric: str) -> PointEvidence | None:
    """The highest load point with a recorded distribution: where the tails matter most."""
    known = [p for p in candidate.points if p.quantiles and p.quantiles.get(metric)]
    return max(known, key=lambda point: point.offered_rate_rps, default=None)


def cdf_chart(candidates: Sequence[CandidateEvidence], *, metric: str) -> str:
    """CDF of `metric` ("ttft_s" or "tpot_s") from the stored whole-percentile sketch."""
    shares = (SKETCH_PERCENTILES / 100).tolist()
    traces = []
    for candidate in candidates:
        point = _cdf_point(candidate, metric)
        if point is not None:
            milliseconds = [value * 1000 for value in point.quantiles[metric]]
            name = f"{_name(candidate)} at {point.key}"
            traces.append(_scatter(milliseconds, shares, name, mode="lines"))
    name = metric.removesuffix("_s").upper()
    layout = axes_layout(
        title=f"{name} distribution (CDF)",
        x=f"{name} (ms)",
        y="share of completed requests",
        **_LAYOUT,
    )
    return figure_json(traces, layout)


def predicted_chart(errors: Sequence[PredictionError]) -> str:
    """Predicted against measured TTFT and TPOT; points on the diagonal were predicted right."""
    traces = []
    largest = 0.0
    for error in errors:
        rows = [row for row in error.rows if row["metric"] in ("ttft_ms", "tpot_ms")]
        largest = max([largest, *(max(row["predicted"], row["measured"]) for row in rows)])
        traces.append(
            _scatter(
                [row["predicted"] for row in rows],
                [row["measured"] for row in rows],
                error.label,
                mode="markers",
                text=[row["metric"] for row in rows],
            )
        )
    traces.append(_scatter([0, largest], [0, largest], "measured = predicted", mode="lines"))
    layout = axes_layout(
        title="Predicted (estimator) against measured latency",
        x="predicted (ms)",
        y="measured (ms)",
        **_LAYOUT,
    )
    return figure_json(traces, layout)


def evidence_figures(
    candidates: Sequence[CandidateEvidence], slo: SLO | None, errors: Sequence[PredictionError]
) -> dict[str, str]:
    """Every figure of the evidence page by its element name (`chart-<name>`)."""
    figures = {
        "ttft": latency_chart(candidates, latency="ttft", slo=slo),
        "tpot": latency_chart(candidates, latency="tpot", slo=slo),
        "goodput": goodput_chart(candidates),
        "pareto": pareto_chart(candidates),
        "ttft-cdf": cdf_chart(candidates, metric="ttft_s"),
        "tpot-cdf": cdf_chart(candidates, metric="tpot_s"),
    }
    if errors:
        figures["predicted"] = predicted_chart(errors)
    return figures
