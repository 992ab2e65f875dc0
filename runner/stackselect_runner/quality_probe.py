"""The output-quality probe a job runs after its load points (docs/runner-protocol.md).

The job spec's `quality` section lists the project's fixed prompts and the sampling (greedy
unless the stack under test serves with its own); the runner sends each prompt once, in order,
to the engine it measured, and uploads the raw outputs. Scoring is the server's
(stackselect_domain/quality.py), so a runner never grades itself. A job may also name one of
the evaluation commands this runner's owner registered (`STACKSELECT_RUNNER_EVALUATIONS`, a
JSON file `{name: {"command": [...], "timeout_s": n}}`); the server never sends a command
line, only a name, and the command's last stdout line must be a JSON object with a `score`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVALUATIONS_ENV = "STACKSELECT_RUNNER_EVALUATIONS"
PROBE_TIMEOUT_S = 120.0
DEFAULT_EVALUATION_TIMEOUT_S = 3600.0
OUTPUT_TAIL_CHARS = 2000
ENDPOINTS = ("chat", "completions")


@dataclass(frozen=True, slots=True)
class QualitySpec:
    """The spec's `quality` section, checked."""

    probe_set: str
    prompts: tuple[Mapping[str, Any], ...]
    max_tokens: int
    sampling: Mapping[str, Any]
    tools: tuple[Mapping[str, Any], ...] = ()
    evaluation: str | None = None
    endpoint: str = "chat"
    stop: tuple[str, ...] = ()

    @classmethod
    def from_job_spec(cls, spec: Mapping[str, Any]) -> QualitySpec | None:
        section = spec.get("quality")
        if section is None:
            return None
        if not isinstance(section, Mapping):
            raise ValueError("quality must be an object")
        prompts = section.get("prompts")
        if not isinstance(prompts, list) or not all(
            isinstance(p, Mapping) and p.get("id") and isinstance(p.get("text"), str)
            for p in prompts
        ):
            raise ValueError("quality.prompts must be a list of {id, text}")
        max_tokens = section.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError("quality.max_tokens must be a whole number >= 1")
        sampling = section.get("sampling") or {}
        if not isinstance(sampling, Mapping):
            raise ValueError("quality.sampling must be an object")
        evaluation = section.get("evaluation")
        if evaluation is not None and not isinstance(evaluation, str):
            raise ValueError("quality.evaluation must be the name of a registered command")
        endpoint = section.get("endpoint") or "chat"
        if endpoint not in ENDPOINTS:
            raise ValueError(f"quality.endpoint must be one of {', '.join(ENDPOINTS)}")
        return cls(
            probe_set=str(section.get("set") or ""),
            prompts=tuple(prompts),
            max_tokens=max_tokens,
            sampling=dict(sampling),
            tools=tuple(section.get("tools") or ()),
            evaluation=evaluation,
            endpoint=endpoint,
            stop=tuple(str(word) for word in section.get("stop") or ()),
        )


def _post_json(url: str, body: Mapping[str, Any]) -> dict[str, Any]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
        return json.loads(response.read())


def _request(spec: QualitySpec, model: str, prompt: Mapping[str, Any]) -> tuple[str, dict]:
    """The path and body of one prompt: a chat message, or the one-line completions form."""
    body: dict[str, Any] = {"model": model, "max_tokens": spec.max_tokens, "stream": False}
    body.update(spec.sampling)
    if spec.stop:
        body["stop"] = list(spec.stop)
    if spec.endpoint == "completions" and prompt.get("kind") != "tool_call":
        return "/v1/completions", {**body, "prompt": prompt.get("prompt") or prompt["text"]}
    body["messages"] = [{"role": "user", "content": prompt["text"]}]
    if prompt.get("kind") == "tool_call" and spec.tools:
        body["tools"] = [dict(tool) for tool in spec.tools]
    return "/v1/chat/completions", body


def _ask(base_url: str, model: str, spec: QualitySpec, prompt: Mapping[str, Any]) -> dict:
    """One non-streamed answer; a failure is recorded, never raised."""
    path, body = _request(spec, model, prompt)
    started = time.perf_counter()
    output: dict[str, Any] = {"id": str(prompt["id"]), "text": None, "tool_calls": None}
    try:
        choice = (_post_json(base_url + path, body).get("choices") or [{}])[0]
        message = choice.get("message") or {}
        output["text"] = message.get("content") if "message" in choice else choice.get("text")
        output["tool_calls"] = message.get("tool_calls") or None
        output["error"] = None
    except (urllib.error.URLError, OSError, ValueError, AttributeError, IndexError) as exc:
        output["error"] = f"{type(exc).__name__}: {exc}"[:500]
    output["latency_s"] = round(time.perf_counter() - started, 6)
    return output


@dataclass
class ProbeResult:
    outputs: list[dict[str, Any]]
    evaluation: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def payload(self, spec: QualitySpec) -> dict[str, Any]:
        return {
            "set": spec.probe_set,
            "sampling": dict(spec.sampling),
            "max_tokens": spec.max_tokens,
            "outputs": self.outputs,
            "evaluation": self.evaluation,
        }


def registered_evaluations(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The evaluation commands this runner's owner allows, by name (empty when none)."""
    path = environ.get(EVALUATIONS_ENV)
    if not path:
        return {}
    try:
        registry = json.loads(Path(path).expanduser().read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{EVALUATIONS_ENV}: cannot read {path}: {exc}") from exc
    if not isinstance(registry, dict):
        raise ValueError(f"{EVALUATIONS_ENV}: {path} must hold a JSON object")
    return registry


def _last_json_line(text: str) -> Any:
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def run_evaluation(name: str, base_url: str, model: str, environ: Mapping[str, str]) -> dict:
    """Run a registered command with the engine's address; its score or why there is none."""
    entry = registered_evaluations(environ).get(name)
    result: dict[str, Any] = {"name": name, "score": None, "metric": None, "exit_code": None}
    command = entry.get("command") if isinstance(entry, Mapping) else None
    if not isinstance(command, list) or not command:
        result["error"] = f"no evaluation named {name!r} is registered on this runner"
        return result
    # Plain replacement, not str.format: an argument may hold JSON or other braces.
    arguments = [
        str(part).replace("{base_url}", base_url).replace("{model}", model) for part in command
    ]
    env = {**environ, "STACKSELECT_BASE_URL": base_url, "STACKSELECT_MODEL": model}
    timeout = float(entry.get("timeout_s") or DEFAULT_EVALUATION_TIMEOUT_S)
    try:
        done = subprocess.run(
            arguments, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"[:500]
        return result
    result["exit_code"] = done.returncode
    result["output_tail"] = (done.stdout + done.stderr)[-OUTPUT_TAIL_CHARS:]
    last = _last_json_line(done.stdout)
    score = last.get("score") if isinstance(last, Mapping) else None
    if done.returncode == 0 and isinstance(score, int | float) and not isinstance(score, bool):
        result["score"] = float(score)
        result["metric"] = str(last.get("metric") or name)
    else:
        result["error"] = "the command's last line was not a JSON object with a numeric score"
    return result


def run_probe(
    base_url: str,
    model: str,
    spec: QualitySpec,
    environ: Mapping[str, str] = os.environ,
) -> ProbeResult:
    """Every prompt once, in order, then the named evaluation (if any)."""
    outputs = [_ask(base_url, model, spec, prompt) for prompt in spec.prompts]
    evaluation = (
        run_evaluation(spec.evaluation, base_url, model, environ) if spec.evaluation else None
    )
    return ProbeResult(outputs, evaluation)


def answered(outputs: Sequence[Mapping[str, Any]]) -> int:
    return sum(output.get("error") is None for output in outputs)
