"""The planner's table of which engine speculates with which method
(stackselect_domain.speculative.ENGINE_METHODS) is what the runner adapters do: every method an
engine is listed with builds a command, every other one is refused by the adapter itself. So
the plan form can refuse a candidate up front without ever disagreeing with the runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from stackselect_domain.speculative import (
    DRAFT_MODEL_METHODS,
    ENGINE_METHODS,
    SPECULATIVE_METHODS,
    Speculative,
    SpeculativeError,
)
from stackselect_runner.engines import StackSettings, UnsupportedSetting, get_engine_adapter
from stackselect_runner.engines.llama_cpp import FRONTENDS

from .test_engine_adapters_commands import launch

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _speculative(method: str) -> dict:
    draft = "drafts/draft-head.gguf" if method in DRAFT_MODEL_METHODS else None
    return {"method": method, "draft_model": draft, "num_tokens": 3}


def _builds(engine: str, method: str, tmp_path: Path) -> bool:
    """Whether the engine's adapter (any llama.cpp frontend) builds a command for the method."""
    options = {"precision": "bf16", "speculative": _speculative(method)}
    if engine == "llama-cpp":
        attempts = [
            launch(tmp_path, "model.gguf", **options, frontend=frontend) for frontend in FRONTENDS
        ]
    else:
        attempts = [launch(tmp_path, MODEL, **options)]
    built = False
    for spec in attempts:
        try:
            get_engine_adapter(engine).build_command(spec)
        except UnsupportedSetting:
            continue
        built = True
    return built


@pytest.mark.parametrize("engine", sorted(ENGINE_METHODS))
@pytest.mark.parametrize("method", SPECULATIVE_METHODS)
def test_an_engine_builds_a_command_for_exactly_the_methods_the_planner_lists(
    engine, method, tmp_path
):
    assert _builds(engine, method, tmp_path) == (method in ENGINE_METHODS[engine])


def test_the_runner_parses_speculation_with_the_domains_rule_and_names_the_job_spec_field():
    settings = StackSettings.from_options(
        {"speculative": {"method": "EAGLE3", "draft_model": "org/head", "num_tokens": 4}}
    )
    assert settings.speculative == Speculative(
        method="eagle3", num_tokens=4, draft_model="org/head"
    )
    with pytest.raises(SpeculativeError, match=r"^engine\.options\.speculative\.num_tokens "):
        StackSettings.from_options({"speculative": {"method": "ngram", "num_tokens": 0}})
    with pytest.raises(SpeculativeError, match=r"draft_model is not used by ngram"):
        StackSettings.from_options(
            {"speculative": {"method": "ngram", "draft_model": "x", "num_tokens": 2}}
        )
