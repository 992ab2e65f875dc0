"""Plotly figures built in Python and handed to the page as JSON (plotly.js is a static file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apps.core.figures import axes_layout, figure_json

_LAYOUT = {
    "margin": {"l": 50, "r": 20, "t": 40, "b": 45},
    "height": 320,
}


def length_histograms(*, inputs: Sequence[int], outputs: Sequence[int]) -> str:
    """Input and output length histograms of a trace, overlaid."""
    traces = [
        {"type": "histogram", "x": list(inputs), "name": "input tokens", "opacity": 0.65},
        {"type": "histogram", "x": list(outputs), "name": "output tokens", "opacity": 0.65},
    ]
    layout = axes_layout(title="Request lengths", x="tokens", barmode="overlay", **_LAYOUT)
    return figure_json(traces, layout)


def arrival_histogram(*, timestamps: Sequence[float]) -> str:
    """Requests per second over the trace, which shows bursts the mean rate hides."""
    start = min(timestamps) if timestamps else 0.0
    trace = {"type": "histogram", "x": [t - start for t in timestamps], "xbins": {"size": 1}}
    layout = axes_layout(title="Arrivals per second", x="seconds from start", **_LAYOUT)
    return figure_json([trace], layout)


def goodput_chart(curves: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    """Predicted goodput against offered request rate, one line per leading candidate."""
    traces = [
        {
            "type": "scatter",
            "x": [point["rate_rps"] for point in points],
            "y": [point["goodput_rps"] for point in points],
            "mode": "lines+markers",
            "name": label,
        }
        for label, points in curves
    ]
    layout = axes_layout(
        title="Predicted SLO goodput (simulated)",
        x="offered rate (requests/s)",
        y="goodput (requests/s meeting the SLO)",
        legend={"orientation": "h", "y": -0.3},
        **{**_LAYOUT, "height": 420},
    )
    return figure_json(traces, layout)
