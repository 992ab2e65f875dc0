"""The runner's model store: catalog slug -> local checkpoint (and draft models declared for
the models they draft for), edited by `models`, listed by `doctor`, and used to launch a real
engine; a job whose model or draft model is missing fails before launch."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from stackselect_runner.cli import main
from stackselect_runner.config import ConfigError, Credentials, RunnerSettings, SimulatedHardware
from stackselect_runner.doctor import diagnose
from stackselect_runner.engines import get_engine_adapter
from stackselect_runner.jobrun import JobPlan, Outcome
from stackselect_runner.model_store import ModelMissing, ModelStore
from stackselect_runner.reprobe import runner_probe

from apps.runners.labels import validate_probe

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


# ---------------------------------------------------------------- draft models

EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def _eagle_spec(draft: str = EAGLE3) -> dict:
    """A vLLM job for llama-3.1-8b speculating with an EAGLE-3 head named as the plan names it."""
    speculative = {"method": "eagle3", "draft_model": draft, "num_tokens": 3}
    spec = _llama_spec("llama-3.1-8b")
    spec["engine"] = {
        **spec["engine"],
        "adapter": "vllm",
        "options": {"precision": "bf16", "speculative": speculative},
    }
    return spec


def _folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def test_a_store_file_of_the_original_shape_loads_and_is_written_back_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "models.json"
    original = {"gemma-3-270m": str(tmp_path / GGUF), "llama-3.1-8b": str(tmp_path)}
    path.write_text(json.dumps(original))
    store = ModelStore.load(path)
    assert (store.models, store.drafts) == (original, {})
    store.save()
    assert json.loads(path.read_text()) == original


def test_models_add_draft_for_stores_a_draft_of_those_models_and_lists_it(
    store_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, head = _folder(tmp_path, "llama"), _folder(tmp_path, "eagle3")
    main(["models", "add", "llama-3.1-8b", str(model)])
    main(["models", "add", EAGLE3, str(head), "--draft-for", "llama-3.1-8b",
          "--draft-for", "llama-3.1-8b-instruct"])  # fmt: skip
    assert f"{EAGLE3} -> {head} (draft for llama-3.1-8b, llama-3.1-8b-instruct)" in (
        capsys.readouterr().out
    )
    assert json.loads(store_file.read_text()) == {
        "llama-3.1-8b": str(model),
        EAGLE3: {"path": str(head), "draft_for": ["llama-3.1-8b", "llama-3.1-8b-instruct"]},
    }
    loaded = ModelStore.load(store_file)
    assert loaded.models == {"llama-3.1-8b": str(model)}
    assert loaded.draft_models() == {EAGLE3: ["llama-3.1-8b", "llama-3.1-8b-instruct"]}
    main(["models", "list"])
    listed = capsys.readouterr().out
    assert f"llama-3.1-8b -> {model}\n" in listed
    assert f"{EAGLE3} -> {head} (draft for llama-3.1-8b, llama-3.1-8b-instruct)" in listed
    # Added again without --draft-for, the same key is a model, no longer a draft.
    main(["models", "add", EAGLE3, str(head)])
    assert json.loads(store_file.read_text())[EAGLE3] == str(head)
    main(["models", "remove", EAGLE3])
    assert EAGLE3 not in json.loads(store_file.read_text())


@pytest.mark.parametrize(
    "entry",
    [
        {"path": "/m/eagle3"},
        {"path": "/m/eagle3", "draft_for": []},
        {"path": "/m/eagle3", "draft_for": "llama-3.1-8b"},
        {"path": 3, "draft_for": ["llama-3.1-8b"]},
        {"path": "/m/eagle3", "draft_for": ["llama-3.1-8b"], "tokens": 3},
    ],
)
def test_a_malformed_draft_entry_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, entry: dict
) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"llama-3.1-8b": "/m/llama", EAGLE3: entry}))
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {EAGLE3!r} must map to")):
        ModelStore.load(path)


def test_the_probe_reports_the_draft_models_and_the_models_they_draft_for(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models.json")
    store.add("llama-3.1-8b", str(tmp_path))
    store.add(EAGLE3, str(tmp_path), ["llama-3.1-8b"])
    store.save()
    probe = runner_probe(RunnerSettings(models_file=store.path), SimulatedHardware("h100-sxm", 1))
    assert probe["models"] == ["llama-3.1-8b"]
    assert probe["draft_models"] == {EAGLE3: ["llama-3.1-8b"]}
    validate_probe(probe)  # what the server accepts


def test_a_speculating_job_launches_the_draft_from_the_store_and_records_where_from(
    tmp_path: Path,
) -> None:
    model, head = _folder(tmp_path, "llama"), _folder(tmp_path, "eagle3")
    store = ModelStore(tmp_path / "models.json")
    store.add("llama-3.1-8b", str(model))
    store.add(EAGLE3, str(head), ["llama-3.1-8b"])
    store.save()
    settings = RunnerSettings(work_dir=tmp_path / "work", models_file=store.path)
    plan = JobPlan.from_spec(_eagle_spec(), settings, ATTEMPT)
    assert plan.model_store == {
        "model_key": "llama-3.1-8b",
        "path": str(model),
        "draft_model_key": EAGLE3,
        "draft_path": str(head),
    }
    assert plan.effective_config()["options"]["draft_model_path"] == str(head)
    command = get_engine_adapter("vllm").build_command(plan.launch)
    config = json.loads(command[command.index("--speculative-config") + 1])
    assert config["model"] == str(head)
    assert EAGLE3 not in " ".join(command)


def test_a_job_whose_draft_model_is_not_in_the_store_fails_fast_with_how_to_add_it(
    fake_api: FakeRunnerServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ModelStore(tmp_path / "models.json")
    store.add("llama-3.1-8b", str(tmp_path))
    store.save()
    monkeypatch.setenv("STACKSELECT_RUNNER_MODELS", str(store.path))
    fake_api.job_spec = _eagle_spec()
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.FAILED
    reason = fake_api.calls[-1].body["reason"]
    assert reason.startswith(
        f"draft model {EAGLE3!r} for 'llama-3.1-8b' is not in this runner's model store"
    )
    assert f"stackselect-runner models add {EAGLE3} /path/to/draft --draft-for llama-3.1-8b" in (
        reason
    )
    assert not (tmp_path / "work" / f"attempt-{ATTEMPT}" / "engine.log").exists()


def test_a_draft_declared_for_another_model_is_missing_for_this_one(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models.json")
    store.add("llama-3.1-8b", str(tmp_path))
    store.add(EAGLE3, str(tmp_path), ["llama-3.1-70b"])
    with pytest.raises(ModelMissing) as missing:
        store.draft_checkpoint_for(EAGLE3, "llama-3.1-8b")
    assert "as a draft for llama-3.1-70b, not for 'llama-3.1-8b'" in str(missing.value)
    assert "--draft-for llama-3.1-70b --draft-for llama-3.1-8b" in str(missing.value)


def test_doctor_lists_draft_models_and_a_draft_whose_model_is_not_in_the_store(
    tmp_path: Path,
) -> None:
    credentials = Credentials("http://stackselect.internal:8000", 5, "ssr_x", "redis://b:6379/0")
    store = ModelStore(tmp_path / "models.json", {"llama-3.1-8b": str(tmp_path)})
    store.add(EAGLE3, str(tmp_path), ["llama-3.1-8b", "qwen2.5-7b"])
    findings = diagnose(NVIDIA_PROBE, credentials, None, store)
    assert (
        f"draft model {EAGLE3} -> {tmp_path} (draft for llama-3.1-8b, qwen2.5-7b)" in findings.found
    )
    assert [line for line in findings.missing if line.startswith("model qwen2.5-7b")] == [
        f"model qwen2.5-7b, which draft model {EAGLE3} drafts for: a job speculates with the "
        "draft only on its model; `stackselect-runner models add qwen2.5-7b /path/to/checkpoint`"
    ]
