"""The plan and job pages read a bounded number of queries."""

from __future__ import annotations

from tests.query_budget import page_queries

BUDGETS = {"list": 7, "plan-detail": 7, "job-detail": 9}  # measured, plus headroom


def test_the_plan_and_job_pages_stay_within_their_query_budgets(alice_client, plan):
    job = plan.jobs.first()

    assert page_queries(alice_client, "benchmarks:list") <= BUDGETS["list"]
    assert page_queries(alice_client, "benchmarks:plan-detail", plan.pk) <= BUDGETS["plan-detail"]
    assert page_queries(alice_client, "benchmarks:job-detail", job.pk) <= BUDGETS["job-detail"]
