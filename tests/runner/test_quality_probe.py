"""The runner's quality probe against the simulated engine, and a team's registered evaluation
command (runner/stackselect_runner/quality_probe.py)."""

from __future__ import annotations

import json
import sys

import pytest
from stackselect_domain.quality import probe_prompts, score_outputs
from stackselect_runner.engines import LaunchSpec, SimulatedEngineAdapter, free_loopback_port
from stackselect_runner.quality_probe import (
    EVALUATIONS_ENV,
    QualitySpec,
    run_evaluation,
    run_probe,
)
from stackselect_runner.simengine.server import SIMULATED_ANSWER


def _spec(endpoint: str, evaluation: str | None = None) -> QualitySpec:
    prompts = [prompt.as_dict() for prompt in probe_prompts(structured_output=False, tools=False)]
    section = {"set": "p", "prompts": prompts, "max_tokens": 8, "endpoint": endpoint,
               "sampling": {"temperature": 0.0}, "evaluation": evaluation}  # fmt: skip
    return QualitySpec.from_job_spec({"quality": section})


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_the_simulated_engine_answers_the_probe_in_a_clearly_simulated_way(tmp_path, endpoint):
    launch = LaunchSpec(model="sim", port=free_loopback_port(), log_path=tmp_path / "engine.log")
    with SimulatedEngineAdapter().start(launch) as engine:
        engine.wait_ready(30)
        result = run_probe(launch.base_url, "sim", _spec(endpoint), environ={})
    assert len(result.outputs) == 8 and all(o["error"] is None for o in result.outputs)
    assert all(o["text"].startswith(SIMULATED_ANSWER) for o in result.outputs)
    assert score_outputs(result.outputs, simulated=True).correct == 0
    assert result.evaluation is None


def test_a_spec_without_quality_runs_no_probe_and_a_bad_one_is_refused():
    assert QualitySpec.from_job_spec({}) is None
    with pytest.raises(ValueError, match=r"quality\.max_tokens"):
        QualitySpec.from_job_spec({"quality": {"prompts": [], "max_tokens": 0}})
    with pytest.raises(ValueError, match=r"quality\.endpoint"):
        QualitySpec.from_job_spec({"quality": {"prompts": [], "max_tokens": 1, "endpoint": "x"}})


def test_a_registered_evaluation_command_reports_its_score(tmp_path):
    script = 'import os; print(\'log line\'); print(\'{"score": 0.625, "metric": "acc"}\')'
    registry = tmp_path / "evaluations.json"
    registry.write_text(json.dumps({"arith": {"command": [sys.executable, "-c", script]}}))
    result = run_evaluation("arith", "http://127.0.0.1:1", "m", {EVALUATIONS_ENV: str(registry)})
    assert (result["score"], result["metric"], result["exit_code"]) == (0.625, "acc", 0)


def test_an_unregistered_or_scoreless_evaluation_is_stored_without_a_score(tmp_path):
    registry = tmp_path / "evaluations.json"
    registry.write_text(json.dumps({"quiet": {"command": [sys.executable, "-c", "print(1)"]}}))
    environ = {EVALUATIONS_ENV: str(registry)}
    missing = run_evaluation("mmlu", "http://127.0.0.1:1", "m", environ)
    assert missing["score"] is None and "no evaluation named 'mmlu'" in missing["error"]
    quiet = run_evaluation("quiet", "http://127.0.0.1:1", "m", environ)
    assert quiet["score"] is None and "numeric score" in quiet["error"]
