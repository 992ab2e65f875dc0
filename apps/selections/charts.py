"""Plotly figures built in Python and handed to the page as JSON (plotly.js is a static file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from apps.core.figures import figure_json, new_figure

_LAYOUT = {
    "margin": {"l": 50, "r": 20, "t": 40, "b": 45},
    "height": 320,
}


def length_histograms(*, inputs: Sequence[int], outputs: Sequence[int]) -> str:
    """Input and output length histograms of a trace, overlaid."""
    figure = new_figure()
    figure.add_trace(go.Histogram(x=list(inputs), name="input tokens", opacity=0.65))
    figure.add_trace(go.Histogram(x=list(outputs), name="output tokens", opacity=0.65))
    figure.update_layout(
        title="Request lengths", barmode="overlay", xaxis_title="tokens", **_LAYOUT
    )
    return figure_json(figure)


def arrival_histogram(*, timestamps: Sequence[float]) -> str:
    """Requests per second over the trace, which shows bursts the mean rate hides."""
    start = min(timestamps) if timestamps else 0.0
    figure = new_figure(go.Histogram(x=[t - start for t in timestamps], xbins={"size": 1}))
    figure.update_layout(title="Arrivals per second", xaxis_title="seconds from start", **_LAYOUT)
    return figure_json(figure)


def goodput_chart(curves: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    """Predicted goodput against offered request rate, one line per leading candidate."""
    figure = new_figure()
    for label, points in curves:
        figure.add_trace(
            go.Scatter(
                x=[point["rate_rps"] for point in points],
                y=[point["goodput_rps"] for point in points],
                mode="lines+markers",
                name=label,
            )
        )
    figure.update_layout(
        title="Predicted SLO goodput (simulated)",
        xaxis_title="offered rate (requests/s)",
        yaxis_title="goodput (requests/s meeting the SLO)",
        legend={"orientation": "h", "y": -0.3},
        **{**_LAYOUT, "height": 420},
    )
    return figure_json(figure)
