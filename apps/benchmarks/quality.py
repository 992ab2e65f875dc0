"""The quality probe of a job: its spec section, and the checks of the runner's upload
(stored by apps/benchmarks/attempts.quality_upload).

The prompts and the scoring rule are the domain's (stackselect_domain/quality.py). A job
probes with greedy decoding unless its stack states the sampling it serves with (a stack's
`sampling`), so a deliberately degraded stack is measured as it would serve. The server scores
what the runner sent; a simulated engine's answers are scored as `simulated`, never measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from stackselect_domain.quality import (
    COMPLETION_STOP,
    PROBE_MAX_TOKENS,
    PROBE_SAMPLING,
    PROBE_SET,
    WEATHER_TOOL,
    probe_prompts,
)

MAX_TEXT_CHARS = 4000
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "seed")
EVALUATION_KEYS = ("name", "score", "metric", "exit_code", "error", "output_tail")


def stack_sampling(stack: Mapping[str, Any]) -> dict[str, Any]:
    """Greedy, unless the stack states its own sampling (only the known keys)."""
    stated = stack.get("sampling") or {}
    if not isinstance(stated, Mapping):
        raise ValueError("sampling: the stack's sampling must be an object")
    return {**PROBE_SAMPLING, **{key: stated[key] for key in SAMPLING_KEYS if key in stated}}


def quality_section(
    *,
    workload: Mapping[str, Any],
    stack: Mapping[str, Any],
    evaluation: str | None,
    endpoint: str,
) -> dict[str, Any]:
    """The job spec's `quality`: a JSON-schema prompt and a tool call when the goal has them;
    on the plan's endpoint (completions prompts answer on one line)."""
    asks_tools = float(workload.get("tool_share") or 0) > 0
    prompts = probe_prompts(structured_output=asks_tools, tools=asks_tools)
    return {
        "set": PROBE_SET,
        "prompts": [prompt.as_dict() for prompt in prompts],
        "max_tokens": PROBE_MAX_TOKENS,
        "sampling": stack_sampling(stack),
        "tools": [WEATHER_TOOL] if asks_tools else [],
        "evaluation": evaluation or None,
        "endpoint": endpoint,
        "stop": COMPLETION_STOP if endpoint == "completions" else [],
    }


def clean_output(raw: Any, index: int) -> dict[str, Any]:
    where = f"outputs[{index}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        raise ValidationError({where: "Each output is an object with a string id."})
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        raise ValidationError({where: "text must be a string or null."})
    tool_calls = raw.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise ValidationError({where: "tool_calls must be a list or null."})
    error = raw.get("error")
    return {
        "id": raw["id"][:60],
        "text": text[:MAX_TEXT_CHARS] if text is not None else None,
        "tool_calls": tool_calls,
        "error": str(error)[:500] if error is not None else None,
        "latency_s": raw.get("latency_s")
        if isinstance(raw.get("latency_s"), int | float)
        else None,
    }


def clean_evaluation(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ValidationError({"evaluation": "An object naming the evaluation, or null."})
    score = raw.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise ValidationError({"evaluation": "score must be a number or null."})
    return {key: raw.get(key) for key in EVALUATION_KEYS}
