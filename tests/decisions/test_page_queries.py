"""The decision pages read a bounded number of queries with measured evidence behind them."""

from __future__ import annotations

from tests.decisions.factories import accepted, measured_by_runner
from tests.query_budget import page_queries

BUDGETS = {"list": 11, "detail": 11}  # measured when written, plus a little headroom


def test_the_decision_pages_stay_within_their_query_budgets(
    alice_client, acme, alice, approver_bob, selection
):
    measured_by_runner(alice, acme, selection)
    record = accepted(alice, approver_bob, acme, selection)

    assert page_queries(alice_client, "decisions:list") <= BUDGETS["list"]
    assert page_queries(alice_client, "decisions:detail", record.pk) <= BUDGETS["detail"]
