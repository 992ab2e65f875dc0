"""The KS statistic and the drift verdict, with hand-computed expectations. No database."""

import math

import numpy as np
import pytest

from apps.decisions.drift import WorkloadSample, ks_critical_value, ks_statistic, workload_drift


def test_the_ks_statistic_is_the_largest_gap_between_the_two_cdfs():
    # F1 steps 1/3 at 1, 2, 3; F2 steps 1/2 at 2 and 4. At x=1: 1/3 - 0; x=2: 2/3 - 1/2;
    # x=3: 1 - 1/2 = 1/2 (the largest); x=4: 1 - 1.
    assert ks_statistic(np.array([1, 2, 3]), np.array([2, 4])) == pytest.approx(0.5)


def test_identical_samples_have_a_zero_statistic_and_disjoint_ones_a_statistic_of_one():
    same = np.array([5, 1, 3, 3])
    assert ks_statistic(same, same[::-1]) == 0
    assert ks_statistic(np.array([1, 2]), np.array([10, 20, 30])) == 1


def test_the_critical_value_follows_the_large_sample_formula():
    # c(0.01) = sqrt(-ln(0.005) / 2) = 1.6276; times sqrt((100 + 400) / (100 * 400)) = 0.1118
    expected = math.sqrt(-math.log(0.005) / 2) * math.sqrt(500 / 40000)
    assert ks_critical_value(100, 400) == pytest.approx(expected)
    assert expected == pytest.approx(0.18197, abs=1e-4)


def test_empty_samples_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="lengths"):
        ks_statistic(np.array([]), np.array([1]))


def sample(inputs, outputs, rate):
    return WorkloadSample(np.asarray(inputs, float), np.asarray(outputs, float), rate)


def test_a_rate_change_of_more_than_a_quarter_is_drift_and_of_a_quarter_is_not():
    lengths = [100] * 50
    reference = sample(lengths, lengths, 4.0)
    assert not workload_drift(reference, sample(lengths, lengths, 5.0)).drifted  # +25%
    verdict = workload_drift(reference, sample(lengths, lengths, 5.2))  # +30%
    assert verdict.drifted
    assert verdict.figures["rate_change"] == pytest.approx(0.3)


def test_shifted_input_lengths_are_drift_with_the_statistic_in_the_reason():
    rng = np.random.default_rng(1)
    reference = sample(rng.normal(500, 50, 400), [100] * 400, None)
    shifted = sample(rng.normal(700, 50, 400), [100] * 400, None)
    verdict = workload_drift(reference, shifted)
    assert verdict.drifted
    assert verdict.reasons[0].startswith("input lengths differ")
    assert verdict.figures["ks_output"] == 0
