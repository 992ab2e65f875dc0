"""`stackselect-runner doctor` (and `status`) say what the machine has and what it lacks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stackselect_runner.cli import main
from stackselect_runner.config import Credentials, SimulatedHardware, save_credentials
from stackselect_runner.doctor import broker_problem, diagnose
from stackselect_runner.model_store import ModelStore

from .fake_api import FakeRunnerServer, serve, unused_loopback_url

NVIDIA_PROBE = {
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}] * 8,
    "gpu_count": 8,
    "driver_version": "550.54.15",
    "cuda_version": "12.4",
    "engines": {"simulated": "0.1.0", "vllm": "0.8.5"},
    "simulated": False,
}


@pytest.fixture
def fake_api() -> Iterator[FakeRunnerServer]:
    with serve(FakeRunnerServer()) as server:
        yield server


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "credentials.json"
    monkeypatch.setenv("STACKSELECT_RUNNER_CONFIG", str(path))
    for name in ("SIMULATE_ACCELERATOR", "SIMULATE_GPUS", "BROKER_URL"):
        monkeypatch.delenv(f"STACKSELECT_RUNNER_{name}", raising=False)
    return path


def _save(path: Path, url: str, broker_url: str) -> None:
    answer = {"runner_id": 5, "credential": "ssr_abcdef12_s3cret", "broker_url": broker_url}
    simulated = SimulatedHardware("h100-sxm", 8)
    save_credentials(Credentials.from_enrollment(url, answer, simulated), path)


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor"])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_doctor_on_an_unenrolled_machine_says_how_to_enroll_and_exits_1(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _doctor(capsys)
    assert code == 1 and "missing; see above" in err
    assert "(absent)" in out
    assert "missing:  enrollment: no credentials here" in out
    assert "found:    engine simulated" in out


def test_doctor_names_a_filesystem_broker_as_missing_for_an_enrolled_runner(
    fake_api: FakeRunnerServer, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _save(config_file, fake_api.url, "filesystem:///srv/stackselect/broker")
    code, out, _ = _doctor(capsys)
    assert code == 1
    assert "found:    no GPU; simulating 8 x h100-sxm (dry runs only)" in out
    assert "found:    the server answers and accepts this runner's credential" in out
    assert "missing:  a reachable broker: the broker is filesystem://" in out


def test_doctor_reports_an_unreachable_server(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _save(config_file, unused_loopback_url(), "redis://127.0.0.1:6379/0")
    code, out, _ = _doctor(capsys)
    assert code == 1 and "missing:  the server: server unreachable" in out


def test_status_lists_what_the_runner_found_after_the_servers_view(
    fake_api: FakeRunnerServer, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _save(config_file, fake_api.url, "redis://127.0.0.1:6379/0")
    main(["status"])
    out = capsys.readouterr().out
    assert out.index("server view:") < out.index("found:    no GPU; simulating 8 x h100-sxm")
    assert "missing:" in out


def test_a_gpu_host_with_an_engine_a_model_and_a_reachable_broker_lacks_nothing(
    tmp_path: Path,
) -> None:
    credentials = Credentials(
        "http://stackselect.internal:8000", 5, "ssr_x", "redis://broker:6379/0"
    )
    store = ModelStore(tmp_path / "models.json", {"llama-3.1-8b": str(tmp_path)})
    findings = diagnose(NVIDIA_PROBE, credentials, None, store)
    assert findings.missing == []
    assert "engine vllm 0.8.5" in findings.found
    assert any("8 GPU(s): NVIDIA H100 80GB HBM3" in line and "CUDA_VISIBLE_DEVICES" in line
               for line in findings.found)  # fmt: skip


def test_a_gpu_host_without_a_real_engine_is_told_measured_plans_need_one(
    tmp_path: Path,
) -> None:
    probe = {**NVIDIA_PROBE, "engines": {"simulated": "0.1.0"}}
    findings = diagnose(probe, None, None, ModelStore(tmp_path / "models.json"))
    assert any(line.startswith("a real engine: none of") for line in findings.missing)


@pytest.mark.parametrize(
    ("broker", "server", "problem"),
    [
        ("redis://127.0.0.1:6379/0", "http://gpu-server:8000", "this machine's own address"),
        ("redis://localhost:6379/0", "http://10.0.0.5:8000", "this machine's own address"),
        ("redis://[::1]:6379/0", "http://10.0.0.5:8000", "this machine's own address"),
        ("redis://127.0.0.1:6379/0", "http://127.0.0.1:8000", None),
        ("redis://broker.internal:6379/0", "http://10.0.0.5:8000", None),
    ],
)
def test_a_loopback_broker_is_a_problem_only_when_the_server_is_elsewhere(
    broker: str, server: str, problem: str | None
) -> None:
    found = broker_problem(broker, server)
    assert (found is None) if problem is None else (problem in found)
