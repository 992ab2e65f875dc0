"""Plotly figures as JSON for plotly.js, every page in one template resolved once per process.

A `go.Figure` applies its template at construction and validates every property of it again,
about 50 ms per figure; pages with several charts paid that on every view. Figures are built
without a template (their own traces and layout still validated) and the template, validated
once, is attached as JSON when the figure is written.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.utils import PlotlyJSONEncoder

TEMPLATE = "plotly_white"


@cache
def _template() -> dict[str, Any]:
    return pio.templates[TEMPLATE].to_plotly_json()


def new_figure(data: Any = None) -> go.Figure:
    """An empty (or `data`) figure that skips the template until `figure_json`."""
    return go.Figure(data=data, layout={"template": None})


def figure_json(figure: go.Figure) -> str:
    """The figure as plotly.js reads it, with the page template."""
    document = figure.to_plotly_json()
    document["layout"]["template"] = _template()
    return json.dumps(document, cls=PlotlyJSONEncoder)
