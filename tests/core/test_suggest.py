"""Error messages name the catalog word a mistyped one most likely meant."""

import pytest

from apps.core.suggest import did_you_mean

KNOWN = ["h100-sxm", "h200-sxm", "mi300x", "llama-3.1-8b", "llama-3.1-70b", "vllm"]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("H100", "h100-sxm"),  # a name without its suffix, in capitals
        ("h200", "h200-sxm"),
        ("MI300X", "mi300x"),  # only the case differs
        ("llama-3-8b", "llama-3.1-8b"),  # a small slip
        ("VLLM", "vllm"),
    ],
)
def test_a_slip_is_answered_with_the_name_it_most_likely_meant(typed, meant):
    assert did_you_mean(typed, KNOWN) == f" Did you mean {meant!r}?"


def test_a_name_like_none_of_the_known_gets_no_guess():
    assert did_you_mean("tpu-v4", KNOWN) == ""
    assert did_you_mean("anything", []) == ""
