"""`stackselect-runner enroll` and `status` against the fake API, and the worker's one task."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from stackselect_runner.cli import main
from stackselect_runner.config import Credentials, RunnerSettings, save_credentials
from stackselect_runner.jobrun import Outcome
from stackselect_runner.worker import TASK_NAME, build_worker_app, celery_settings, worker_argv

from .fake_api import CREDENTIAL, FakeRunnerServer, serve, unused_loopback_url


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


def failed_command_message(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run a command that must exit with status 1; return what it printed on stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    return capsys.readouterr().err


def enroll_argv(url: str, *extra: str) -> list[str]:
    return ["enroll", "--url", url, "--token", "sse_abcdefgh_tok", "--name", "laptop", *extra]


def test_enroll_sends_the_probe_saves_a_private_credential_and_prints_the_queues(
    fake_api: FakeRunnerServer, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(enroll_argv(fake_api.url, "--simulate-accelerator", "h100-sxm", "--simulate-gpus", "2"))
    sent = fake_api.calls_to("/enroll")[0].body
    assert (sent["token"], sent["name"]) == ("sse_abcdefgh_tok", "laptop")
    assert sent["probe"]["simulated"] is True
    assert sent["probe"]["simulated_accelerator"] == "h100-sxm"
    assert sent["probe"]["gpu_count"] == 2
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    saved = json.loads(config_file.read_text())
    assert saved["credential"] == CREDENTIAL
    assert saved["runner_id"] == 5
    assert saved["simulated"] == {"accelerator": "h100-sxm", "gpu_count": 2}
    printed = capsys.readouterr().out
    assert "enrolled runner 5 (laptop)" in printed
    assert "runner.5, pool.1.h100-sxm.1" in printed


@pytest.mark.parametrize("status", [401, 403])
def test_enroll_with_a_bad_token_exits_non_zero_with_the_servers_message(
    fake_api: FakeRunnerServer,
    config_file: Path,
    capsys: pytest.CaptureFixture[str],
    status: int,
) -> None:
    fake_api.enroll_refusal = "Enrollment token expired."
    fake_api.enroll_refusal_status = status
    message = failed_command_message(enroll_argv(fake_api.url), capsys)
    assert "enrollment refused: Enrollment token expired." in message
    assert not config_file.exists()


def saved_credentials(path: Path, url: str, credential: str = CREDENTIAL) -> None:
    answer = {
        "runner_id": 5,
        "credential": credential,
        "broker_url": "redis://:hunter2@127.0.0.1:6379/0",
        "queues": ["runner.5"],
    }
    save_credentials(Credentials.from_enrollment(url, answer, None), path)


def test_status_shows_the_saved_config_without_secrets_and_the_servers_view(
    fake_api: FakeRunnerServer, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved_credentials(config_file, fake_api.url)
    main(["status"])
    printed = capsys.readouterr().out
    assert "runner id:   5" in printed
    assert "ssr_abcdef12_…" in printed
    assert "redis://:****@127.0.0.1:6379/0" in printed
    assert "s3cret" not in printed and "hunter2" not in printed
    assert "reachable:   yes" in printed
    assert '"cancel": false' in printed
    # The server's queues (a pool it added since), not the list saved at enrollment.
    assert "queues:      runner.5, pool.1.h100-sxm.1 (the server's current list)" in printed
    assert fake_api.calls_to("/heartbeat")[0].body == {
        "attempts": [],
        "attempt_id": None,
        "progress": None,
    }


def test_status_exits_non_zero_when_the_credential_is_revoked(
    fake_api: FakeRunnerServer, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved_credentials(config_file, fake_api.url, credential="ssr_abcdef12_revoked")
    message = failed_command_message(["status"], capsys)
    assert "credential rejected: Invalid runner credential." in message


def test_status_exits_non_zero_when_the_server_is_unreachable_showing_the_saved_queues_as_such(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved_credentials(config_file, unused_loopback_url())
    with pytest.raises(SystemExit) as exit_info:
        main(["status"])
    assert exit_info.value.code == 1
    printed = capsys.readouterr()
    assert "server unreachable: POST heartbeat: no answer after 1 tries" in printed.err
    fallback = "runner.5 (saved at enrollment, may be stale: the server could not be asked)"
    assert f"queues:      {fallback}" in printed.out


def test_start_without_enrollment_says_to_enroll_first(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = failed_command_message(["start"], capsys)
    assert "run `stackselect-runner enroll` first" in message


class ScriptedJobRunner:
    """Returns the given outcomes in turn and records the attempts it was asked to run."""

    def __init__(self, *outcomes: Outcome) -> None:
        self.outcomes = list(outcomes)
        self.attempts: list[int] = []
        self.gpu_counts: list[int | None] = []

    def run(self, attempt_id: int, gpu_count: int | None = None) -> Outcome:
        self.attempts.append(attempt_id)
        self.gpu_counts.append(gpu_count)
        return self.outcomes.pop(0)


def worker_credentials() -> Credentials:
    answer = {
        "runner_id": 5,
        "credential": CREDENTIAL,
        "broker_url": "redis://127.0.0.1:6379/0",
        "broker_transport_options": {"global_keyprefix": "ss:"},
    }
    return Credentials.from_enrollment("http://h", answer, None)


def test_the_worker_is_configured_for_one_late_acknowledged_job_at_a_time() -> None:
    settings = RunnerSettings(broker_url="redis://override:6379/2", visibility_timeout_s=7200)
    conf = celery_settings(worker_credentials(), settings)
    assert conf["broker_url"] == "redis://override:6379/2"
    assert conf["broker_transport_options"] == {
        "visibility_timeout": 7200,
        "global_keyprefix": "ss:",
    }
    assert conf["task_acks_late"] is True
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["task_reject_on_worker_lost"] is False
    argv = worker_argv(5, ["runner.5", "pool.1.h100-sxm.1"])
    assert argv[argv.index("--queues") + 1] == "runner.5,pool.1.h100-sxm.1"
    assert argv[argv.index("--concurrency") + 1] == "1"


def test_the_task_is_registered_by_name_and_retries_only_an_unanswered_claim() -> None:
    job_runner = ScriptedJobRunner(Outcome.CLAIM_UNREACHABLE, Outcome.DROPPED)
    app = build_worker_app(worker_credentials(), RunnerSettings(), job_runner)
    app.conf.task_always_eager = True
    result = app.tasks[TASK_NAME].apply(kwargs={"attempt_id": 11})
    assert result.get() == "dropped"
    assert job_runner.attempts == [11, 11]
    assert app.tasks[TASK_NAME].apply(kwargs={"attempt_id": "11"}).get() == "dropped"
    assert job_runner.attempts == [11, 11]
    bad_count = {"attempt_id": 12, "gpu_count": "2"}
    assert app.tasks[TASK_NAME].apply(kwargs=bad_count).get() == "dropped"
    assert job_runner.attempts == [11, 11] and job_runner.gpu_counts == [None, None]
