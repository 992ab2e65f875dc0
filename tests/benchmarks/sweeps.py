"""A simulated tuning sweep through the whole chain: the plan both slow sweep tests create,
and waiting for its jobs to end on a live runner process."""

from __future__ import annotations

from typing import Any

from apps.benchmarks.choices import JOB_TERMINAL
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.fleet.processes import wait_for

SWEEP_TIMEOUT_S = 400


def simulated_sweep(
    *, user: Any, team: Any, selection: Any, values: dict[str, list]
) -> BenchmarkPlan:
    """A dry-run plan of two load points that sweeps `values` besides each candidate's
    defaults (and its recommended setting, where the catalog has one)."""
    options = PlanOptions(
        run_mode="simulated",
        request_count=10,
        load_points=({"rate_rps": 2.0}, {"rate_rps": 6.0}),
        warmup_requests=1,
        max_attempts=1,
        tuning_sweep=True,
        tuning_values=values,
    )
    return plan_create(actor_user=user, team=team, selection_id=selection.pk, options=options)


def wait_until_every_job_ends(plan: BenchmarkPlan, runner: Any) -> None:
    def ended() -> bool:
        return set(plan.jobs.values_list("state", flat=True)) <= JOB_TERMINAL

    wait_for(ended, timeout=SWEEP_TIMEOUT_S, what="the sweep's jobs\n" + runner.output())
