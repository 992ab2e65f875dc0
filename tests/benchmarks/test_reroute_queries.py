"""Moving pending jobs between queued and waiting costs the same queries for a few jobs or many.

A reaper pass after the only runner went offline, and that runner's comeback heartbeat, each
move every pending job of the team; the moves are one UPDATE per shared (state, reason) and
one INSERT of the audit events, one event per job, the chain unbroken. A comeback while the
jobs are queued on another runner reads none of them: their reasons do not name who is online.
"""

from __future__ import annotations

from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_chain_first_break
from apps.benchmarks.attempts import runner_heartbeat
from apps.benchmarks.dispatch import reap_expired_leases
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.runners.models import Runner
from tests.benchmarks.factories import enrolled_runner, selection_with_candidates
from tests.query_budget import call_queries

DRY_RUN = PlanOptions(run_mode="simulated", request_count=4, load_points=({"rate_rps": 1.0},))


def _plan_jobs(alice, acme, rows, count: int) -> BenchmarkPlan:
    layouts = [("h100-sxm", 1, "bf16")] * count
    selection = selection_with_candidates(acme, alice, rows, layouts=layouts)
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=DRY_RUN)


def _go_offline(runner: Runner) -> None:
    Runner.objects.filter(pk=runner.pk).update(last_heartbeat_at=None)
    runner.last_heartbeat_at = None


def _states(acme) -> set[str]:
    return set(BenchmarkJob.objects.filter(team=acme).values_list("state", flat=True))


def test_a_reaper_pass_moving_5_or_55_jobs_to_waiting_costs_the_same_queries(
    alice, acme, rows, sim_runner
):
    runner, _ = sim_runner
    counts = []
    for count in (5, 50):
        _plan_jobs(alice, acme, rows, count)
        assert _states(acme) == {"queued"}
        _go_offline(runner)
        counts.append(call_queries(reap_expired_leases))
        assert _states(acme) == {"waiting_for_runner"}
        runner_heartbeat(runner=runner)
    assert counts[0] == counts[1]


def test_a_comeback_heartbeat_queueing_5_or_50_waiting_jobs_costs_the_same_queries(
    alice, acme, rows, sim_runner
):
    runner, _ = sim_runner
    counts = []
    for count in (5, 50):
        _go_offline(runner)
        plan = _plan_jobs(alice, acme, rows, count)
        assert set(plan.jobs.values_list("state", flat=True)) == {"waiting_for_runner"}
        counts.append(call_queries(runner_heartbeat, runner=runner))
        assert _states(acme) == {"queued"}
    assert counts[0] == counts[1]


def test_a_comeback_while_jobs_are_queued_on_another_runner_reads_and_rewrites_none_of_them(
    alice, acme, rows, sim_runner, django_assert_max_num_queries
):
    """sim-1 stays online the whole time; sim-2 goes offline and comes back."""
    second, _ = enrolled_runner(alice, acme, name="sim-2")
    counts = []
    for count in (5, 50):
        _plan_jobs(alice, acme, rows, count)
        reasons = dict(BenchmarkJob.objects.filter(team=acme).values_list("pk", "state_reason"))
        assert all("on the runners that have it: sim-1, sim-2." in r for r in reasons.values())
        _go_offline(second)
        counts.append(call_queries(runner_heartbeat, runner=second))
        after = dict(BenchmarkJob.objects.filter(team=acme).values_list("pk", "state_reason"))
        assert after == reasons and _states(acme) == {"queued"}
    assert counts[0] == counts[1]
    _go_offline(second)
    with django_assert_max_num_queries(counts[0]) as captured:
        runner_heartbeat(runner=second)
    jobs_read = [
        q["sql"] for q in captured.captured_queries if "benchmarks_benchmarkjob" in q["sql"]
    ]
    assert jobs_read, "the comeback looks for waiting jobs"
    assert all(sql.startswith("SELECT") and "'waiting_for_runner'" in sql for sql in jobs_read)


def test_each_job_the_reaper_moves_has_its_own_audit_event_and_the_chain_holds(
    alice, acme, rows, sim_runner
):
    runner, _ = sim_runner
    _plan_jobs(alice, acme, rows, 5)
    _go_offline(runner)
    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    reap_expired_leases()
    events = AuditEvent.objects.filter(id__gt=last).order_by("id")
    jobs = BenchmarkJob.objects.filter(team=acme).order_by("pk")
    assert [(event.action, event.object_id) for event in events] == [
        ("job.waiting_for_runner", str(job.pk)) for job in jobs
    ]
    assert [(event.before, event.after) for event in events] == [
        ({"state": "queued"}, {"state": "waiting_for_runner", "state_reason": job.state_reason})
        for job in jobs
    ]
    assert {event.actor_name for event in events} == {"dispatcher"}
    assert {event.team_id for event in events} == {acme.pk}
    assert audit_chain_first_break() is None
