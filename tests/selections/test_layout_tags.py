"""The layout rules the candidate rows read from a stored stack."""

from __future__ import annotations

import pytest

from apps.selections.templatetags.layouts import copies_of_one_replica


def _stack(tp: int, ep: int, dp: int) -> dict[str, int]:
    return {"tp": tp, "pp": 1, "ep": ep, "dp": dp}


@pytest.mark.parametrize(
    ("stack", "copies"),
    [
        (_stack(tp=2, ep=1, dp=4), 4),  # four 2-GPU replicas, each deployable alone
        (_stack(tp=2, ep=2, dp=4), 4),  # experts within each replica's own GPUs
        (_stack(tp=1, ep=8, dp=8), 0),  # DEP8: eight attention ranks share one expert group
        (_stack(tp=2, ep=4, dp=4), 0),  # expert groups of two replicas each
        (_stack(tp=8, ep=1, dp=1), 0),  # one replica
    ],
)
def test_only_replicas_that_run_alone_count_as_copies_of_one_replica(stack, copies):
    assert copies_of_one_replica(stack) == copies
