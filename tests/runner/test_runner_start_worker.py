"""`stackselect-runner start` runs a real Celery worker that takes jobs sent by task name.

The broker is kombu's filesystem transport (no Redis needed); the web app's side is played by
a bare Celery app that only knows the task name, as the protocol requires.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import stackselect_runner
from celery import Celery
from stackselect_runner.uploads import idempotency_key

from .fake_api import FakeRunnerServer, serve
from .test_runner_job_runs import job_spec

# The runner may run from the source checkout rather than an installed package.
PACKAGE_ROOT = str(Path(stackselect_runner.__file__).resolve().parent.parent)
BROKER_FOLDERS = {
    "data_folder_in": "queue",
    "data_folder_out": "queue",
    "processed_folder": "processed",
    "control_folder": "control",
}


def wait_for(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.2)
    return False


def test_start_consumes_its_queues_and_runs_each_attempt_once(tmp_path: Path) -> None:
    folders = {key: str(tmp_path / "broker" / name) for key, name in BROKER_FOLDERS.items()}
    for folder in folders.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        "STACKSELECT_RUNNER_CONFIG": str(tmp_path / "credentials.json"),
        "STACKSELECT_RUNNER_WORK_DIR": str(tmp_path / "work"),
        "STACKSELECT_RUNNER_BROKER_URL": "filesystem://",
        "STACKSELECT_RUNNER_BROKER_TRANSPORT_OPTIONS": json.dumps(folders),
        "STACKSELECT_RUNNER_REPORT_INTERVAL_S": "0.2",
    }
    command = [sys.executable, "-m", "stackselect_runner.cli"]
    with serve(FakeRunnerServer()) as fake:
        fake.job_spec = job_spec(4, [{"index": 0, "concurrency": 2}])
        enroll = [*command, "enroll", "--url", fake.url, "--token", "sse_a_b", "--name", "w"]
        subprocess.run([*enroll, "--simulate-accelerator", "h100-sxm"], env=env, check=True)
        web_app = Celery("web", broker="filesystem://", set_as_current=False)
        web_app.conf.broker_transport_options = folders
        # The same attempt delivered twice, through the pool queue and the runner's own queue.
        for queue in ("pool.1.h100-sxm.1", "runner.5"):
            web_app.send_task(
                "stackselect.runner.run_attempt", kwargs={"attempt_id": 7}, queue=queue
            )
        output = tmp_path / "worker.out"
        with output.open("w") as sink:
            worker = subprocess.Popen([*command, "start"], env=env, stdout=sink, stderr=sink)
            try:
                assert wait_for(lambda: len(fake.calls_to("/claim")) == 2, 60), output.read_text()
            finally:
                # The jobs are done; a warm shutdown would poll the file broker for seconds.
                worker.kill()
                worker.wait(30)
        assert fake.calls_to("/probe")
        assert [call.body["state"] for call in fake.calls_to("/finish")] == ["succeeded"]
        assert list(fake.uploads) == [idempotency_key(7, 0, 0)]
        printed = output.read_text()
        assert "concurrency 2: 4/4 ok" in printed
        assert "already_claimed" in printed
