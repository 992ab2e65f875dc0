"""The runner pages cost the same queries for one runner or attempt as for many."""

from __future__ import annotations

from django.utils import timezone

from apps.benchmarks.choices import AttemptState
from apps.benchmarks.models import JobAttempt
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.runners.models import Runner
from apps.runners.services import enrollment_token_create
from tests.benchmarks.factories import enrolled_runner
from tests.query_budget import page_queries, queries_before_and_after

MANY = 12


def _busy_on(runner: Runner, *, alice, acme, selection, count: int) -> None:
    """`count` more plans whose one attempt is running on `runner`."""
    options = PlanOptions(run_mode="simulated", request_count=20, load_points=({"rate_rps": 1.0},))
    for _ in range(count):
        plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)
        JobAttempt.objects.filter(job__plan=plan).update(
            runner=runner, state=AttemptState.RUNNING, claimed_at=timezone.now()
        )


def test_the_runner_list_reads_as_many_queries_for_many_busy_runners_as_for_one(
    alice_client, alice, acme, selection, sim_runner
):
    runner, _ = sim_runner
    _busy_on(runner, alice=alice, acme=acme, selection=selection, count=1)

    def grow() -> None:
        for n in range(MANY):
            other, _ = enrolled_runner(alice, acme, name=f"sim-{n + 2}")
            _busy_on(other, alice=alice, acme=acme, selection=selection, count=1)

    one, many = queries_before_and_after(lambda: page_queries(alice_client, "runners:list"), grow)
    assert Runner.objects.filter(team=acme).count() == MANY + 1
    assert many == one


def test_the_runner_page_reads_as_many_queries_for_many_recent_attempts_as_for_one(
    alice_client, alice, acme, selection, sim_runner
):
    runner, _ = sim_runner
    _busy_on(runner, alice=alice, acme=acme, selection=selection, count=1)

    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "runners:detail", runner.pk),
        lambda: _busy_on(runner, alice=alice, acme=acme, selection=selection, count=MANY),
    )
    assert runner.attempts.count() > MANY
    assert many == one


def test_the_enroll_page_reads_as_many_queries_for_many_enrollment_tokens_as_for_one(
    alice_client, alice, acme, rows
):
    def tokens(count: int) -> None:
        for _ in range(count):
            enrollment_token_create(actor_user=alice, team=acme)

    tokens(1)
    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "runners:enroll"), lambda: tokens(15)
    )
    assert many == one
