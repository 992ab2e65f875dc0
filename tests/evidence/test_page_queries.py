"""The evidence page reads a bounded number of queries whatever the runs behind it."""

from __future__ import annotations

from tests.evidence.factories import measured_attempt
from tests.evidence.samples import streamed
from tests.query_budget import page_queries

BUDGET = 10  # measured when this guard was written, plus a little headroom


def test_the_evidence_page_stays_within_its_query_budget_with_two_measured_candidates(
    alice_client, selection, plan, candidates
):
    records = [streamed(i, ttft_s=0.1, gaps=[0.02, 0.02]) for i in range(5)]
    for candidate in candidates:
        measured_attempt(plan, candidate, records)

    assert page_queries(alice_client, "evidence:selection", selection.pk) <= BUDGET
