"""A running runner follows its model store: a model added (or removed) while it runs is probed,
reported to the server, and its pool queue consumed (or cancelled) without a restart.

Against the fake API, to reach the cases a live server does not stage cheaply (removal, a stale
server view, GPUs changed, a malformed store, the file broker); the whole path on real parts is
tests/llamacpp/test_runner_follows_its_model_store_end_to_end.py."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from stackselect_runner.api import RunnerApi
from stackselect_runner.config import RunnerSettings, SimulatedHardware
from stackselect_runner.model_store import ModelStore
from stackselect_runner.reprobe import ProbeWatch, QueueSwitch, runner_probe

from .fake_api import CREDENTIAL, FakeRunnerServer, serve
from .test_runner_job_runs import job_spec
from .test_runner_start_worker import BROKER_FOLDERS, PACKAGE_ROOT, wait_for

MODEL = "llama-3.1-8b"
OWN = "runner.5"
SIMULATED_POOL = "pool.1.h100-sxm.1.simulated"
MODEL_POOL = f"pool.1.h100-sxm.1.vllm.model-{MODEL}"


def queues_of(probe: dict[str, Any]) -> list[str]:
    """The server's answer, reduced to what matters here: one pool per model in the store."""
    return [OWN, SIMULATED_POOL] + [
        f"pool.1.h100-sxm.1.vllm.model-{model}" for model in probe["models"]
    ]


class RecordingConsumer:
    """Stands in for Celery's worker consumer: records what the switch schedules on it."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[str, str]] = []

    def call_soon(self, p: Callable[..., Any], *args: Any) -> None:
        self.scheduled.append((p.__name__, *args))

    def add_task_queue(self, queue: str) -> None: ...

    def cancel_task_queue(self, queue: str) -> None: ...


@pytest.fixture
def fake_api() -> Iterator[FakeRunnerServer]:
    with serve(FakeRunnerServer(probe_queues=queues_of)) as server:
        yield server


def _watch(
    fake: FakeRunnerServer,
    store: Path,
    consumer: RecordingConsumer,
    server_queues: Callable[[], list[str] | None] = lambda: None,
) -> tuple[ProbeWatch, QueueSwitch]:
    settings = RunnerSettings(models_file=store)
    simulated = SimulatedHardware("h100-sxm", 1)
    first = runner_probe(settings, simulated)
    switch = QueueSwitch(queues_of(first))
    switch.attach(consumer)
    api = RunnerApi(fake.url, CREDENTIAL)

    def probe() -> dict[str, Any]:
        return runner_probe(settings, simulated)

    watch = ProbeWatch(api, probe, switch, 1.0, sent=first, server_queues=server_queues)
    return watch, switch


def test_a_model_added_to_the_store_is_reported_and_its_pool_consumed_and_removing_it_cancels(
    tmp_path: Path, fake_api: FakeRunnerServer
) -> None:
    store_file = tmp_path / "models.json"
    consumer = RecordingConsumer()
    watch, switch = _watch(fake_api, store_file, consumer)
    assert watch.check() is False
    assert fake_api.calls_to("/probe") == [] and consumer.scheduled == []

    checkpoint = tmp_path / "weights"
    checkpoint.mkdir()
    store = ModelStore.load(store_file)
    store.add(MODEL, str(checkpoint))
    store.save()
    assert watch.check() is True
    assert [call.body["probe"]["models"] for call in fake_api.calls_to("/probe")] == [[MODEL]]
    assert consumer.scheduled == [("add_task_queue", MODEL_POOL)]
    assert switch.wanted() == [OWN, SIMULATED_POOL, MODEL_POOL]
    assert watch.check() is False  # unchanged since: nothing sent again

    store.remove(MODEL)
    store.save()
    assert watch.check() is True
    assert consumer.scheduled[1:] == [("cancel_task_queue", MODEL_POOL)]
    assert len(fake_api.calls_to("/probe")) == 2


def test_a_server_whose_heartbeats_name_other_queues_gets_the_probe_again_once(
    tmp_path: Path, fake_api: FakeRunnerServer
) -> None:
    # The server was upgraded (or restored) since this runner's start: its labels are stale.
    server_view = [[OWN]]
    consumer = RecordingConsumer()
    watch, switch = _watch(fake_api, tmp_path / "models.json", consumer, lambda: server_view[0])
    assert watch.check() is True
    assert [call.body["probe"]["models"] for call in fake_api.calls_to("/probe")] == [[]]
    assert switch.wanted() == [OWN, SIMULATED_POOL] and consumer.scheduled == []
    assert watch.check() is False  # the same stale answer: no new heartbeat since the probe
    server_view[0] = [OWN, SIMULATED_POOL]
    assert watch.check() is False
    assert len(fake_api.calls_to("/probe")) == 1


def test_gpus_that_changed_since_start_are_not_reported_until_a_restart(
    tmp_path: Path, fake_api: FakeRunnerServer, caplog: pytest.LogCaptureFixture
) -> None:
    store_file = tmp_path / "models.json"
    settings = RunnerSettings(models_file=store_file)
    first = runner_probe(settings, SimulatedHardware("h100-sxm", 1))
    switch = QueueSwitch(queues_of(first))

    def probe() -> dict[str, Any]:  # one more GPU than the worker's device pool was sized for
        return runner_probe(settings, SimulatedHardware("h100-sxm", 2))

    api = RunnerApi(fake_api.url, CREDENTIAL)
    watch = ProbeWatch(api, probe, switch, 1.0, sent=first, server_queues=lambda: None)
    with caplog.at_level(logging.WARNING):
        assert watch.check() is False
    assert "the GPUs changed since start (1 -> 2 GPU(s)); restart the runner" in caplog.text
    assert fake_api.calls_to("/probe") == []

    store = ModelStore.load(store_file)
    store.add(MODEL, str(tmp_path))
    store.save()
    assert watch.check() is True
    (sent,) = [call.body["probe"] for call in fake_api.calls_to("/probe")]
    assert (sent["models"], sent["gpu_count"]) == ([MODEL], 1)


def test_queues_chosen_before_the_worker_consumes_are_applied_when_it_starts() -> None:
    switch = QueueSwitch([OWN, SIMULATED_POOL])
    switch.follow([OWN, MODEL_POOL])
    consumer = RecordingConsumer()
    switch.attach(consumer)
    assert consumer.scheduled == [
        ("add_task_queue", MODEL_POOL),
        ("cancel_task_queue", SIMULATED_POOL),
    ]


def test_an_answer_without_queues_leaves_the_runner_consuming_what_it_had() -> None:
    switch = QueueSwitch([OWN, MODEL_POOL])
    consumer = RecordingConsumer()
    switch.attach(consumer)
    switch.follow([])
    assert consumer.scheduled == [] and switch.wanted() == [OWN, MODEL_POOL]


def test_a_malformed_store_keeps_the_old_labels_and_says_why(
    tmp_path: Path, fake_api: FakeRunnerServer, caplog: pytest.LogCaptureFixture
) -> None:
    store_file = tmp_path / "models.json"
    consumer = RecordingConsumer()
    watch, _ = _watch(fake_api, store_file, consumer)
    store_file.write_text("[not an object")
    with caplog.at_level(logging.WARNING):
        assert watch.check() is False
    assert fake_api.calls_to("/probe") == [] and consumer.scheduled == []
    assert f"cannot read the model store {store_file}" in caplog.text


@pytest.fixture
def broker(tmp_path: Path) -> tuple[str, dict]:
    """(URL, transport options) of the embedded file broker, whose worker loop is Celery's
    blocking one. The Redis broker (kombu's event hub) is covered on real parts, live server
    included: tests/llamacpp/test_runner_follows_its_model_store_end_to_end.py."""
    folders = {key: str(tmp_path / "broker" / name) for key, name in BROKER_FOLDERS.items()}
    for folder in folders.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    return "filesystem://", folders


def test_a_running_worker_takes_a_job_for_a_model_added_to_its_store_without_a_restart(
    tmp_path: Path, broker: tuple[str, dict]
) -> None:
    broker_url, transport_options = broker
    store_file = tmp_path / "models.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        "STACKSELECT_RUNNER_CONFIG": str(tmp_path / "credentials.json"),
        "STACKSELECT_RUNNER_MODELS": str(store_file),
        "STACKSELECT_RUNNER_WORK_DIR": str(tmp_path / "work"),
        "STACKSELECT_RUNNER_BROKER_URL": broker_url,
        "STACKSELECT_RUNNER_BROKER_TRANSPORT_OPTIONS": json.dumps(transport_options),
        "STACKSELECT_RUNNER_REPORT_INTERVAL_S": "0.2",
        "STACKSELECT_RUNNER_REPROBE_INTERVAL_S": "0.5",
    }
    command = [sys.executable, "-m", "stackselect_runner.cli"]
    with serve(FakeRunnerServer(probe_queues=queues_of)) as fake:
        fake.job_spec = job_spec(2, [{"index": 0, "concurrency": 1}])
        enroll = [*command, "enroll", "--url", fake.url, "--token", "sse_a_b", "--name", "w"]
        subprocess.run([*enroll, "--simulate-accelerator", "h100-sxm"], env=env, check=True)
        web_app = Celery("web", broker=broker_url, set_as_current=False)
        web_app.conf.broker_transport_options = transport_options
        # Published while no runner consumes its model's pool: it waits on that queue.
        web_app.send_task(
            "stackselect.runner.run_attempt", kwargs={"attempt_id": 7}, queue=MODEL_POOL
        )
        output = tmp_path / "worker.out"
        with output.open("w") as sink:
            worker = subprocess.Popen([*command, "start"], env=env, stdout=sink, stderr=sink)
            try:
                assert wait_for(lambda: "ready." in output.read_text(), 60), output.read_text()
                assert wait_for(lambda: len(fake.calls_to("/probe")) == 1, 10)
                assert not wait_for(lambda: fake.calls_to("/claim"), 3), "took a job it lacks"

                subprocess.run(
                    [*command, "models", "add", MODEL, str(tmp_path)], env=env, check=True
                )
                assert wait_for(lambda: fake.calls_to("/claim"), 60), output.read_text()
                assert wait_for(lambda: fake.calls_to("/finish"), 60), output.read_text()
            finally:
                worker.kill()
                worker.wait(30)
        probes = [call.body["probe"]["models"] for call in fake.calls_to("/probe")]
        assert probes == [[], [MODEL]]
        assert [call.body["state"] for call in fake.calls_to("/finish")] == ["succeeded"]
        assert f"now consuming {MODEL_POOL}" in output.read_text()
