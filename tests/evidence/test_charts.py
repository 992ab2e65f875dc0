"""The evidence page's charts: valid plotly figures, lines named by candidate and mode."""

from __future__ import annotations

import pytest

from tests.benchmarks.factories import SLO
from tests.evidence.factories import measured_attempt
from tests.evidence.samples import streamed
from tests.figures import page_figures

pytestmark = pytest.mark.django_db
RECORDS = [streamed(i, ttft_s=0.1 + i / 100, gaps=[0.02, 0.03]) for i in range(6)]


def test_every_evidence_chart_is_a_valid_plotly_figure_with_the_slo_target_drawn(
    alice_client, selection, plan, candidates
):
    measured_attempt(plan, candidates[0], RECORDS)
    page = alice_client.get(f"/evidence/selections/{selection.pk}/").content.decode()
    figures = page_figures(page)
    assert {"ttft", "tpot", "goodput", "pareto", "ttft-cdf", "tpot-cdf"} <= set(figures)
    ttft = figures["ttft"]
    names = [trace["name"] for trace in ttft["data"]]
    assert [name.rsplit(" ", 1)[1] for name in names] == ["P50", "P99"]
    assert all("vllm" in name.lower() and "simulated" not in name for name in names)
    assert [trace["x"] for trace in ttft["data"]] == [[1.0, 2.0]] * 2
    (target,) = ttft["layout"]["shapes"]
    assert target["y0"] == target["y1"] == SLO["ttft_ms"]
    assert ttft["layout"]["annotations"][0]["text"] == "SLO"
    assert ttft["layout"]["template"]["layout"]["paper_bgcolor"] == "white"
    cdf = figures["ttft-cdf"]["data"][0]
    assert cdf["y"][0] < cdf["y"][-1] and sorted(cdf["x"]) == cdf["x"]
