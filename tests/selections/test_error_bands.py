"""Error bands: the 10th-90th percentile of a method's held-out relative errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.selections.error_bands import (
    CAPACITY,
    METRICS,
    BandScope,
    band_of,
    band_record,
    error_band,
    write_bands,
)


def test_a_band_spans_the_10th_to_the_90th_percentile() -> None:
    errors = [i / 100 for i in range(-50, 51)]  # -0.50 .. +0.50 in steps of 0.01
    low, high = band_of(errors)
    assert low == pytest.approx(-0.40)
    assert high == pytest.approx(0.40)


def test_a_band_needs_two_errors() -> None:
    with pytest.raises(ValueError, match="at least two"):
        band_of([0.1])


@pytest.mark.parametrize("method", ["roofline", "aiconfigurator", "calibrated"])
@pytest.mark.parametrize("metric", METRICS)
def test_every_method_has_a_stored_band_per_metric_with_its_date(method: str, metric: str) -> None:
    band = error_band(method, metric)
    assert band is not None, "run bench/bench_accuracy.py --write-bands"
    assert band.low <= band.high
    assert band.rows >= 2
    assert band.measured_on and "held-out" in band.source


def test_an_unknown_method_has_no_band() -> None:
    assert error_band("crystal-ball", "ttft") is None


@pytest.mark.parametrize("method", ["roofline", "aiconfigurator"])
def test_the_step_time_methods_have_a_capacity_band_from_published_maximum_load_cells(
    method: str,
) -> None:
    band = error_band(method, CAPACITY)
    assert band is not None, "run bench/bench_capacity.py --write-bands"
    assert band.low <= band.high and band.rows >= 2
    assert "maximum-load" in band.source and band.measured_on
    # the overview measured TensorRT-LLM on NVIDIA GPUs and nothing else
    assert band.scope == BandScope(engines=("tensorrt-llm",), vendors=("nvidia",))


@pytest.mark.parametrize("method", ["roofline", "aiconfigurator", "calibrated"])
@pytest.mark.parametrize("metric", METRICS)
def test_the_stored_latency_bands_name_the_engines_and_vendors_of_their_held_out_rows(
    method: str, metric: str
) -> None:
    scope = error_band(method, metric).scope
    assert scope is not None, "run bench/bench_accuracy.py --write-bands"
    assert scope.vendors == ("nvidia",)
    assert set(scope.engines) <= {"sglang", "tensorrt-llm", "vllm"} and scope.engines


def test_a_band_covers_a_stack_only_when_its_engine_and_vendor_were_both_measured() -> None:
    scope = BandScope.of([("tensorrt-llm", "nvidia"), ("vllm", "nvidia"), ("vllm", "nvidia")])

    assert scope == BandScope(engines=("tensorrt-llm", "vllm"), vendors=("nvidia",))
    assert scope.covers("vllm", "nvidia") is True
    assert scope.covers("vllm", "amd") is False
    assert scope.covers("sglang", "nvidia") is False
    assert scope.covers(None, "nvidia") is None  # an estimate that names no engine


def test_an_estimates_band_says_whether_it_was_measured_on_the_stacks_engine_and_vendor() -> None:
    inside = band_record("roofline", "replica_capacity_rps", engine="tensorrt-llm", vendor="nvidia")
    outside = band_record("roofline", "replica_capacity_rps", engine="vllm", vendor="nvidia")
    unsaid = band_record("roofline", "replica_capacity_rps")

    assert inside["measured_for"] == {"engines": ["tensorrt-llm"], "vendors": ["nvidia"]}
    assert (inside["covers_stack"], outside["covers_stack"], unsaid["covers_stack"]) == (
        True,
        False,
        None,
    )
    assert inside["band"] == outside["band"]  # the figures stay; only the claim differs


def test_writing_one_benchs_bands_keeps_the_others_with_their_own_date_and_source(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bands.json"
    spread = [i / 10 for i in range(-5, 6)]
    write_bands(
        {"roofline": {"ttft": spread}}, measured_on="2026-01-01", source="latency", path=path
    )
    write_bands(
        {"roofline": {CAPACITY: [0.0, 1.0]}, "aiconfigurator": {CAPACITY: [0.5]}},
        measured_on="2026-02-02",
        source="capacity",
        path=path,
    )
    write_bands(
        {"roofline": {"ttft": [0.0, 0.1]}}, measured_on="2026-03-03", source="new", path=path
    )

    bands = json.loads(path.read_text())["bands"]
    assert set(bands) == {"roofline"}  # one error is no band
    assert bands["roofline"]["ttft"]["rows"] == 2
    assert (bands["roofline"]["ttft"]["measured_on"], bands["roofline"]["ttft"]["source"]) == (
        "2026-03-03",
        "new",
    )
    assert bands["roofline"][CAPACITY] == {
        "low": 0.1,
        "high": 0.9,
        "rows": 2,
        "measured_on": "2026-02-02",
        "source": "capacity",
    }


def test_writing_bands_keeps_each_methods_scope_with_its_band(tmp_path: Path) -> None:
    path = tmp_path / "bands.json"
    write_bands(
        {"roofline": {CAPACITY: [0.0, 1.0]}, "aiconfigurator": {CAPACITY: [0.2, 0.4]}},
        measured_on="2026-02-02",
        source="capacity",
        scopes={"roofline": BandScope(("tensorrt-llm",), ("amd", "nvidia"))},
        path=path,
    )

    bands = json.loads(path.read_text())["bands"]
    assert bands["roofline"][CAPACITY]["measured_for"] == {
        "engines": ["tensorrt-llm"],
        "vendors": ["amd", "nvidia"],
    }
    assert "measured_for" not in bands["aiconfigurator"][CAPACITY]  # no scope given, none said
