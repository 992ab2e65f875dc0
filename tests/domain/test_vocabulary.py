"""The vocabulary is declared once, and every reader takes its words from it."""

from __future__ import annotations

import pytest
from stackselect_domain.vocabulary import LENGTH_KINDS, PRECISION_WORDS, first_precision
from stackselect_domain.workload import parse_length


@pytest.mark.parametrize("kind", LENGTH_KINDS)
def test_every_length_kind_of_the_vocabulary_parses(kind: str) -> None:
    data = {
        "fixed": {"kind": "fixed", "value": 8},
        "normal": {"kind": "normal", "mean": 8, "std": 2},
        "lognormal": {"kind": "lognormal", "median": 8, "sigma": 0.5},
        "empirical": {"kind": "empirical", "values": [4, 8]},
        "replay": {"kind": "replay", "values": [4, 8]},
    }[kind]
    assert parse_length(data).mean() > 0


@pytest.mark.parametrize(
    ("stored", "word"),
    [("fp8", "fp8"), (["int4_awq", "bf16"], "int4_awq"), ([], "bf16"), (None, "bf16")],
)
def test_the_first_precision_reads_a_list_or_a_plain_string(stored: object, word: str) -> None:
    assert first_precision(stored) == word
    assert word in PRECISION_WORDS
