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
    METHOD_FRONTENDS,
    SPECULATIVE_METHODS,
    Speculative,
    SpeculativeError,
    speculative_frontend,
)
from stackselect_runner.engines import StackSettings, UnsupportedSetting, get_engine_adapter
from stackselect_runner.engines.llama_cpp import FRONTENDS

from .test_engine_adapters_commands import launch

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _options(method: str) -> dict:
    """A stack speculating with `method`, its draft (if any) resolved by the model store."""
    if method not in DRAFT_MODEL_METHODS:
        return {"precision": "bf16", "speculative": {"method": method, "num_tokens": 3}}
    speculative = {"method": method, "draft_model": "org/draft-head", "num_tokens": 3}
    return {"precision": "bf16", "speculative": speculative, "draft_model_path": "draft.gguf"}


def _frontends_building(engine: str, method: str, tmp_path: Path) -> list[str]:
    """The frontends (one, "", for an engine with one) whose command the adapter builds."""
    if engine == "llama-cpp":
        attempts = {
            frontend: launch(tmp_path, "model.gguf", **_options(method), frontend=frontend)
            for frontend in FRONTENDS
        }
    else:
        attempts = {"": launch(tmp_path, MODEL, **_options(method))}
    built = []
    for frontend, spec in attempts.items():
        try:
            get_engine_adapter(engine).build_command(spec)
        except UnsupportedSetting:
            continue
        built.append(frontend)
    return built


def _builds(engine: str, method: str, tmp_path: Path) -> bool:
    """Whether the engine's adapter (any llama.cpp frontend) builds a command for the method."""
    return bool(_frontends_building(engine, method, tmp_path))


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


@pytest.mark.parametrize("method", sorted(METHOD_FRONTENDS["llama-cpp"]))
def test_the_llama_cpp_frontend_the_planner_names_for_a_method_is_the_one_that_speculates_so(
    method, tmp_path
):
    assert _frontends_building("llama-cpp", method, tmp_path) == [
        speculative_frontend("llama-cpp", method)
    ]
    assert set(METHOD_FRONTENDS["llama-cpp"].values()) == set(FRONTENDS)
