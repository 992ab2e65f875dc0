"""Counts read one way wherever they are written."""

from __future__ import annotations

from stackselect_domain.words import grouped


def test_a_count_is_grouped_by_thousands_and_a_fraction_keeps_one_decimal() -> None:
    assert grouped(16384) == "16,384"
    assert grouped(1_000_000.0) == "1,000,000"  # never "1e+06"
    assert grouped(999) == "999"
    assert grouped(1536.25) == "1,536.2"
