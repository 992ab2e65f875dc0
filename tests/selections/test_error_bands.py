"""Error bands: the 10th-90th percentile of a method's held-out relative errors."""

from __future__ import annotations

import pytest

from apps.selections.error_bands import METRICS, band_of, error_band


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
