"""The output-quality probe: a short fixed prompt set with checkable answers, and its scores.

docs/domain.md section 5: a stack is never chosen for being faster while answering worse
(aggressive quantisation, a wrong sampling setting, a broken chat template). Every benchmark
job sends these prompts with greedy decoding after its load points; the runner uploads the
raw outputs and the server scores them here, so the runner and the web app judge by one rule.
The prompts are written for this project; nothing is downloaded at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from stackselect_domain.vocabulary import MODE_MEASURED, MODE_SIMULATED

PROBE_SET = "stackselect-probe-1"
# Greedy and short: the probe checks answers, not speed.
PROBE_MAX_TOKENS = 32
PROBE_SAMPLING: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "seed": 0}
# A candidate may score this much below the reference before it is flagged (a share, 0..1).
DEFAULT_QUALITY_TOLERANCE = 0.05
QualityFlag = Literal["faster_but_worse", "worse"]
FLAG_WORDS: dict[str, str] = {"faster_but_worse": "faster but worse", "worse": "worse"}
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
}


@dataclass(frozen=True, slots=True)
class ProbePrompt:
    """One question: `kind` says which check applies, `expected` what a right answer holds."""

    id: str
    kind: Literal["arithmetic", "factual", "format", "json_schema", "tool_call"]
    text: str
    expected: str

    def as_dict(self) -> dict[str, Any]:
        """The chat form (`text`) and the completions form (`prompt`, answered on one line)."""
        return {"id": self.id, "kind": self.kind, "text": self.text, "prompt": completion(self)}


BASE_PROMPTS: tuple[ProbePrompt, ...] = (
    ProbePrompt("add", "arithmetic", "What is 7 + 5? Reply with the number only.", "12"),
    ProbePrompt("multiply", "arithmetic", "What is 9 times 3? Reply with the number only.", "27"),
    ProbePrompt("subtract", "arithmetic", "What is 100 minus 1? Reply with the number only.", "99"),
    ProbePrompt("capital", "factual", "What is the capital of France? One word.", "paris"),
    ProbePrompt("week", "factual", "How many days are in a week? Reply with the number only.", "7"),
    ProbePrompt("sky", "factual", "What colour is a clear daytime sky? One word.", "blue"),
    ProbePrompt(
        "upper", "format", "Reply with the word OK in capital letters, nothing else.", "OK"
    ),
    ProbePrompt(
        "digits",
        "format",
        "Write the numbers one, two and three as digits, comma-separated.",
        "1,2,3",
    ),
)
JSON_PROMPT = ProbePrompt(
    "json_city",
    "json_schema",
    "Answer with only a JSON object matching this JSON schema: "
    + json.dumps(CITY_SCHEMA)
    + ". The city is Paris and the country is France.",
    "paris",
)
TOOL_PROMPT = ProbePrompt(
    "tool_weather", "tool_call", "What is the weather in Paris right now? Use the tool.", "paris"
)
# For the completions endpoint (and base models without a chat template): two worked examples
# set the answer format, and the answer ends at the line break (COMPLETION_STOP).
FEW_SHOT = (
    "Answer each question briefly.\n\n"
    "Q: What is 2 + 2? Reply with the number only.\nA: 4\n\n"
    "Q: What is the capital of Italy? One word.\nA: Rome\n\n"
)
COMPLETION_STOP = ["\n"]
NUMBER = re.compile(r"-?\d+")
WORD = re.compile(r"[a-z]+")


def completion(prompt: ProbePrompt) -> str:
    return f"{FEW_SHOT}Q: {prompt.text}\nA:"


def probe_prompts(*, structured_output: bool, tools: bool) -> tuple[ProbePrompt, ...]:
    """The base set, plus a JSON-schema prompt and a tool call when the goal asks for them."""
    extra = (JSON_PROMPT,) * structured_output + (TOOL_PROMPT,) * tools
    return BASE_PROMPTS + extra


def prompt_by_id(prompt_id: str) -> ProbePrompt | None:
    return next((p for p in (*BASE_PROMPTS, JSON_PROMPT, TOOL_PROMPT) if p.id == prompt_id), None)


def _first_json_object(text: str) -> Any:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except ValueError:
        return None


def _tool_city(tool_calls: Any) -> str | None:
    """The `city` argument of the first get_weather call, None when there is none."""
    if not isinstance(tool_calls, list) or not tool_calls:
        return None
    function = (tool_calls[0] or {}).get("function") or {}
    if function.get("name") != "get_weather":
        return None
    arguments = function.get("arguments")
    parsed = _first_json_object(arguments) if isinstance(arguments, str) else arguments
    city = parsed.get("city") if isinstance(parsed, Mapping) else None
    return city if isinstance(city, str) else None


def is_correct(prompt: ProbePrompt, text: str | None, tool_calls: Any = None) -> bool:
    """Whether one output answers its prompt (a missing output never does)."""
    if prompt.kind == "tool_call":
        city = _tool_city(tool_calls)
        return city is not None and prompt.expected in city.lower()
    if text is None:
        return False
    stripped = text.strip()
    if prompt.kind == "arithmetic" or (prompt.kind == "factual" and prompt.expected.isdigit()):
        numbers = NUMBER.findall(stripped)
        return bool(numbers) and numbers[0] == prompt.expected
    if prompt.kind == "factual":
        words = WORD.findall(stripped.lower())
        return words[:1] == [prompt.expected]  # "One word": the first word is the answer
    if prompt.kind == "format" and prompt.expected == "OK":
        return stripped.rstrip(".!") == "OK"
    if prompt.kind == "format":
        return re.sub(r"\s", "", stripped).rstrip(".") == prompt.expected
    document = _first_json_object(stripped)
    return (
        isinstance(document, Mapping)
        and all(isinstance(document.get(key), str) for key in CITY_SCHEMA["required"])
        and str(document["city"]).lower() == prompt.expected
    )


def answer_key(text: str | None, tool_calls: Any = None) -> str:
    """What two outputs must share to agree: the words, case and spacing aside."""
    if tool_calls:
        return json.dumps(tool_calls, sort_keys=True)
    return " ".join((text or "").lower().split()).rstrip(".!")


@dataclass(frozen=True, slots=True)
class QualityScore:
    """Correct answers over probe prompts; `mode` says measured on an engine or simulated."""

    correct: int
    total: int
    mode: str  # vocabulary.RUN_MODES

    @property
    def rate(self) -> float | None:
        return self.correct / self.total if self.total else None

    def as_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "total": self.total, "rate": self.rate, "mode": self.mode}


def score_outputs(outputs: Sequence[Mapping[str, Any]], *, simulated: bool) -> QualityScore:
    """Score uploaded outputs `[{id, text, tool_calls}]`; unknown prompt ids are not counted."""
    correct = total = 0
    for output in outputs:
        prompt = prompt_by_id(str(output.get("id")))
        if prompt is None:
            continue
        total += 1
        correct += is_correct(prompt, output.get("text"), output.get("tool_calls"))
    return QualityScore(correct, total, MODE_SIMULATED if simulated else MODE_MEASURED)


def agreement(
    outputs: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]]
) -> float | None:
    """Share of the prompts both answered on which the answers agree; None without overlap."""
    theirs = {str(o.get("id")): answer_key(o.get("text"), o.get("tool_calls")) for o in reference}
    shared = [o for o in outputs if str(o.get("id")) in theirs]
    if not shared:
        return None
    same = sum(
        answer_key(o.get("text"), o.get("tool_calls")) == theirs[str(o["id"])] for o in shared
    )
    return same / len(shared)


def check_tolerance(value: Any) -> float:
    """A quality tolerance is a share between 0 and 1 (0.05: five points of correctness)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("quality_tolerance: must be a number between 0 and 1")
    if not 0 <= value <= 1:
        raise ValueError(f"quality_tolerance: must be between 0 and 1, got {value}")
    return float(value)


def quality_flag(
    rate: float | None, reference_rate: float | None, *, tolerance: float, faster: bool
) -> QualityFlag | None:
    """'faster but worse' or 'worse' when `rate` is below the reference's by more than the
    tolerance; None when it is not, or when either side was not scored."""
    if rate is None or reference_rate is None:
        return None
    if reference_rate - rate <= tolerance + 1e-12:
        return None
    return "faster_but_worse" if faster else "worse"
