"""The runner's model store: catalog slug -> local checkpoint, edited by `models`, listed by
`doctor`, and used to launch a real engine; a job whose model is missing fails before launch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from stackselect_runner.cli import main
from stackselect_runner.config import Credentials, RunnerSettings
from stackselect_runner.doctor import diagnose
from stackselect_runner.jobrun import JobPlan, Outcome
from stackselect_runner.model_store import ModelMissing, ModelStore

from .fake_api import FakeRunnerServer, serve
from .test_runner_doctor import NVIDIA_PROBE
from .test_runner_job_runs import ATTEMPT, job_runner

GGUF = "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture
def store_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "models.json"
    monkeypatch.setenv("STACKSELECT_RUNNER_CONFIG", str(tmp_path / "config" / "credentials.json"))
    monkeypatch.delenv("STACKSELECT_RUNNER_MODELS", raising=False)
    return path


@pytest.fixture
def fake_api() -> Iterator[FakeRunnerServer]:
    with serve(FakeRunnerServer()) as server:
        yield server


def _llama_spec(model_key: str) -> dict:
    return {
        "attempt_id": ATTEMPT,
        "engine": {
            "adapter": "llama-cpp",
            "model": "google/gemma-3-270m",
            "model_key": model_key,
            "served_model_name": "google/gemma-3-270m",
            "options": {"precision": "q4_k_m", "frontend": "llama-cpp-python"},
        },
        "harness": {"endpoint": "completions"},
        "requests": [{"index": 0, "arrival_s": 0.0, "input_tokens": 8, "output_tokens": 2}],
        "load_points": [{"index": 0, "rate_rps": 1.0}],
    }


def test_models_add_list_and_remove_edit_the_store_next_to_the_credentials(
    store_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = tmp_path / GGUF
    checkpoint.write_bytes(b"GGUF")
    main(["models", "add", "gemma-3-270m", str(checkpoint)])
    assert json.loads(store_file.read_text()) == {"gemma-3-270m": str(checkpoint)}
    main(["models", "list"])
    assert f"gemma-3-270m -> {checkpoint}" in capsys.readouterr().out
    main(["models", "remove", "gemma-3-270m"])
    assert json.loads(store_file.read_text()) == {}


def test_adding_a_checkpoint_that_does_not_exist_is_refused_with_a_message(
    store_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["models", "add", "llama-3.1-8b", "/nowhere/Llama-3.1-8B"])
    assert exit_info.value.code == 1
    assert "/nowhere/Llama-3.1-8B: no such file or folder" in capsys.readouterr().err
    assert not store_file.exists()


def test_doctor_lists_the_models_in_the_store_and_an_empty_store_as_missing(
    tmp_path: Path,
) -> None:
    credentials = Credentials("http://stackselect.internal:8000", 5, "ssr_x", "redis://b:6379/0")
    empty = ModelStore(tmp_path / "models.json")
    findings = diagnose(NVIDIA_PROBE, credentials, None, empty)
    assert any(line.startswith("a model in the store") for line in findings.missing)
    stored = ModelStore(tmp_path / "models.json", {"llama-3.1-8b": str(tmp_path)})
    findings = diagnose(NVIDIA_PROBE, credentials, None, stored)
    assert findings.missing == []
    assert f"model llama-3.1-8b -> {tmp_path}" in findings.found


def test_a_real_engine_is_launched_on_the_checkpoint_the_store_maps_its_model_to(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / GGUF
    checkpoint.write_bytes(b"GGUF")
    store = ModelStore(tmp_path / "models.json")
    store.add("gemma-3-270m", str(checkpoint))
    store.save()
    settings = RunnerSettings(work_dir=tmp_path / "work", models_file=store.path)
    plan = JobPlan.from_spec(_llama_spec("gemma-3-270m"), settings, ATTEMPT)
    assert plan.launch.options["model_path"] == str(checkpoint)


def test_a_job_whose_model_is_not_in_the_store_fails_fast_with_how_to_add_it(
    fake_api: FakeRunnerServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STACKSELECT_RUNNER_MODELS", str(tmp_path / "models.json"))
    fake_api.job_spec = _llama_spec("llama-3.1-8b")
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.FAILED
    reason = fake_api.calls[-1].body["reason"]
    assert reason.startswith("model 'llama-3.1-8b' is not in this runner's model store")
    assert "stackselect-runner models add llama-3.1-8b" in reason
    assert not (tmp_path / "work" / f"attempt-{ATTEMPT}" / "engine.log").exists()
    with pytest.raises(ModelMissing):
        ModelStore.load(tmp_path / "models.json").checkpoint_for("llama-3.1-8b")
