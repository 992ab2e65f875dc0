"""Fixtures of the end-to-end fleet tests: the live server, a small catalog, enrolled runners."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.runners.services import enrollment_token_create
from tests.benchmarks.factories import catalog, selection_with_candidates
from tests.fleet.processes import RunnerProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def fast_fleet(settings):
    """Short heartbeats and leases so losses and cancels show within seconds."""
    settings.RUNNER_HEARTBEAT_INTERVAL_S = 1
    settings.RUNNER_LEASE_SECONDS = 4
    settings.RUNNER_OFFLINE_AFTER_S = 5
    settings.RUNNER_REDISPATCH_AFTER_S = 3


@pytest.fixture
def rows(transactional_db):
    return catalog()


@pytest.fixture
def runners(live_server, alice, acme, tmp_path, fast_fleet):
    started: list[RunnerProcess] = []

    def make(
        name: str,
        gpus: int = 1,
        offers: tuple[str, ...] | None = None,
        models: dict[str, Path] | None = None,
        drafts: dict[str, tuple[Path, str]] | None = None,
    ) -> RunnerProcess:
        """`drafts`: draft model key -> (its checkpoint, the model slug it drafts for)."""
        _, token = enrollment_token_create(actor_user=alice, team=acme)
        runner = RunnerProcess(name=name, home=tmp_path / name, offers=offers)
        for slug, checkpoint in (models or {}).items():
            runner.add_model(slug, checkpoint)
        for key, (checkpoint, model) in (drafts or {}).items():
            runner.add_model(key, checkpoint, draft_for=model)
        runner.enroll(live_server.url, token, gpus=gpus)
        runner.start()
        started.append(runner)
        return runner

    yield make
    for runner in started:
        runner.stop()


@pytest.fixture
def selection(acme, alice, rows):
    return selection_with_candidates(acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")])
