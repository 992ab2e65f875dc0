"""Fixtures of the fleet tests: catalog rows, a planned selection and enrolled runners."""

from __future__ import annotations

import pytest

from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import (
    RunnerClient,
    catalog,
    enrolled_runner,
    selection_with_candidates,
)
from tests.fleet.conftest import fast_fleet, runners  # noqa: F401  (the sweep's real runner)


@pytest.fixture
def rows(db):
    return catalog()


@pytest.fixture
def selection(acme, alice, rows):
    return selection_with_candidates(acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")])


@pytest.fixture
def sim_runner(alice, acme, rows):
    """An enrolled simulated H100 runner of Acme and its API client."""
    runner, credential = enrolled_runner(alice, acme)
    return runner, RunnerClient(credential)


@pytest.fixture
def plan(alice, acme, selection, sim_runner):
    options = PlanOptions(
        run_mode="simulated", request_count=20, load_points=({"rate_rps": 1.0}, {"rate_rps": 2.0})
    )
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


@pytest.fixture
def attempt(plan):
    return plan.jobs.get().attempts.get()
