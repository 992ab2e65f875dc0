"""Engine adapters launch, probe and stop engine subprocesses without leaving zombies."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from stackselect_runner.engines import (
    EngineAdapter,
    EngineProcess,
    EngineStartError,
    LaunchSpec,
    SimulatedEngineAdapter,
    engine_slugs,
    get_engine_adapter,
)

from .conftest import MODEL

STUBBORN_SCRIPT = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


class ScriptAdapter(EngineAdapter):
    """Runs a Python snippet instead of an engine (never registered)."""

    slug = "script"

    def __init__(self, script: str) -> None:
        self.script = script

    def build_command(self, launch: LaunchSpec) -> list[str]:
        return [sys.executable, "-c", self.script]


def is_gone(pid: int) -> bool:
    """No such process, or only a zombie left for an init that does not reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def wait_for_log_line(process: EngineProcess, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = process.log_tail().strip()
        if text:
            return text
        time.sleep(0.05)
    raise AssertionError("the script wrote nothing")


def test_the_simulated_adapter_is_registered_by_its_slug() -> None:
    assert "simulated" in engine_slugs()
    assert isinstance(get_engine_adapter("simulated"), SimulatedEngineAdapter)
    with pytest.raises(ValueError, match="unknown engine 'nope'"):
        get_engine_adapter("nope")


def test_the_simulated_command_carries_the_step_cost_and_batch_limits(tmp_path: Path) -> None:
    launch = LaunchSpec(
        model="m",
        port=1234,
        log_path=tmp_path / "log",
        options={"step_cost": {"step_overhead_s": 0.5}, "max_num_seqs": 8},
    )
    command = SimulatedEngineAdapter().build_command(launch)
    assert command[command.index("--port") + 1] == "1234"
    assert json.loads(command[command.index("--step-cost-json") + 1]) == {"step_overhead_s": 0.5}
    assert command[command.index("--max-num-seqs") + 1] == "8"
    with pytest.raises(ValueError, match="colour"):
        SimulatedEngineAdapter().build_command(
            LaunchSpec(model="m", port=1, log_path=tmp_path / "log", options={"colour": 1})
        )


def test_the_simulated_engine_subprocess_serves_reports_its_version_and_stops_cleanly(
    engine_process: EngineProcess,
) -> None:
    launch = engine_process.launch_spec
    assert engine_process.adapter.version(launch) == "stackselect-simulated"
    with urllib.request.urlopen(launch.base_url + "/v1/models", timeout=5) as response:
        assert json.load(response)["data"][0]["id"] == MODEL
    assert engine_process.stop(grace_s=5) == 0
    assert not engine_process.running
    assert is_gone(engine_process.pid)
    assert "Running on" in launch.log_path.read_text()


def test_an_engine_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    launch = LaunchSpec(model="m", port=1, log_path=tmp_path / "stubborn.log")
    process = ScriptAdapter(STUBBORN_SCRIPT).start(launch)
    child_pid = int(wait_for_log_line(process))
    started = time.monotonic()
    returncode = process.stop(grace_s=0.5)
    assert time.monotonic() - started >= 0.5
    assert returncode == -9
    assert is_gone(process.pid)
    deadline = time.monotonic() + 5
    while not is_gone(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert is_gone(child_pid)


def test_an_engine_that_exits_during_start_up_raises_with_its_log(tmp_path: Path) -> None:
    script = "print('cuda out of memory', flush=True); raise SystemExit(3)"
    launch = LaunchSpec(model="m", port=1, log_path=tmp_path / "crash.log")
    process = ScriptAdapter(script).start(launch)
    with pytest.raises(EngineStartError, match=r"(?s)code 3.*cuda out of memory"):
        process.wait_ready(timeout_s=10)
    process.stop(grace_s=1)
    assert not os.path.exists(f"/proc/{process.pid}") or is_gone(process.pid)
