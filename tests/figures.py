"""The plotly figures a page carries, each checked against plotly's own schema."""

from __future__ import annotations

import json
import re
from typing import Any

import plotly.graph_objects as go

_FIGURE = re.compile(r'<script id="figure-([\w-]+)" type="application/json">(.*?)</script>', re.S)


def page_figures(page: str) -> dict[str, dict[str, Any]]:
    """Every `figure-<name>` of the page by name; a property plotly does not know raises here
    (the browser would silently ignore it)."""
    figures = {}
    for name, script in _FIGURE.findall(page):
        document = json.loads(json.loads(script))  # json_script of the figure's JSON text
        go.Figure(document)
        figures[name] = document
    return figures
