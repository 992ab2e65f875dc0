"""Plotly figures as plain JSON for plotly.js, every page in one template resolved once per process.

Building `go.Figure` objects validated every property of every trace again on each view: about
half of the evidence page's time went to plotly's own deep copies and validator classes. The
charts are small and fixed in shape, so they are written as plain dicts in plotly.js's schema,
and the tests validate each one against plotly's schema (`go.Figure(...)` raises on a property
it does not know), so a misspelt property fails a test instead of being ignored by the browser.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

import plotly.io as pio
from plotly.utils import PlotlyJSONEncoder

TEMPLATE = "plotly_white"


@cache
def _template() -> dict[str, Any]:
    return pio.templates[TEMPLATE].to_plotly_json()


def titled(text: str) -> dict[str, str]:
    """A title as plotly.js 3 and later read it (a bare string is no longer accepted)."""
    return {"text": text}


def axes_layout(*, title: str, x: str, y: str | None = None, **layout: Any) -> dict[str, Any]:
    """A chart's layout with its title and axis titles."""
    axes = {"xaxis": {"title": titled(x)}}
    if y is not None:
        axes["yaxis"] = {"title": titled(y)}
    return {"title": titled(title), **axes, **layout}


def horizontal_line(layout: dict[str, Any], *, y: float, label: str) -> None:
    """A dotted red line across the plot at `y`, labelled at its right end (a target)."""
    layout.setdefault("shapes", []).append(
        {
            "type": "line",
            "xref": "x domain",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": y,
            "y1": y,
            "line": {"dash": "dot", "color": "red"},
        }
    )
    layout.setdefault("annotations", []).append(
        {
            "text": label,
            "xref": "x domain",
            "x": 1,
            "yref": "y",
            "y": y,
            "showarrow": False,
            "xanchor": "right",
            "yanchor": "bottom",
        }
    )


def figure_json(traces: Sequence[dict[str, Any]], layout: dict[str, Any]) -> str:
    """The figure as plotly.js reads it, with the page template."""
    document = {"data": list(traces), "layout": {**layout, "template": _template()}}
    return json.dumps(document, cls=PlotlyJSONEncoder)
