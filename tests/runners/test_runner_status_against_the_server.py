"""`stackselect-runner status` against the live server: the queues it prints are the ones the
server derives from the runner's latest probe, not the list saved at enrollment."""

from __future__ import annotations

import pytest
from stackselect_runner.api import RunnerApi
from stackselect_runner.config import RunnerSettings, SimulatedHardware, load_credentials
from stackselect_runner.model_store import models_path
from stackselect_runner.reprobe import runner_probe

from apps.runners.models import Runner
from apps.runners.selectors import runner_queues
from apps.runners.services import enrollment_token_create
from tests.benchmarks.factories import catalog
from tests.fleet.processes import RunnerProcess

pytestmark = pytest.mark.django_db(transaction=True)


def test_status_prints_the_queues_the_server_derived_since_a_model_joined_the_store(
    live_server, alice, acme, tmp_path
):
    catalog()
    _, token = enrollment_token_create(actor_user=alice, team=acme)
    gpu_box = RunnerProcess(name="gpu-box", home=tmp_path / "gpu-box")
    gpu_box.enroll(live_server.url, token)
    credentials = load_credentials(gpu_box.home / "credentials.json")
    saved = list(credentials.queues)

    # What a running runner does when a model joins its store: probe again, post the probe.
    gpu_box.add_model("gemma-3-270m", tmp_path)
    settings = RunnerSettings(models_file=models_path(gpu_box.env))
    probe = runner_probe(settings, SimulatedHardware("h100-sxm", 1))
    RunnerApi(credentials.url, credentials.credential).send_probe(probe)

    now = runner_queues(Runner.objects.get(name="gpu-box"))
    assert any(queue.endswith(".model-gemma-3-270m") for queue in now) and now != saved
    printed = gpu_box.cli("status")
    assert f"queues:      {', '.join(now)} (the server's current list)" in printed
    assert "saved at enrollment" not in printed
