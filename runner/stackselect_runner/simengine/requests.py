"""Validation of OpenAI-style generation requests for the simulated engine.

Every client error is a ValueError whose message the server returns in the OpenAI error shape.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackselect_domain.checks import require_int

DEFAULT_MAX_TOKENS = 16


def _count_words(content: Any) -> int:
    """Prompt tokens = whitespace words (the harness builds prompts at one word per token)."""
    if isinstance(content, str):
        return len(content.split())
    if isinstance(content, list):
        if all(isinstance(item, int) for item in content):
            return len(content)
        return sum(_count_words(item) for item in content)
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return _count_words(content["text"])
    raise ValueError(f"unsupported prompt content: {type(content).__name__}")


def _positive_int(body: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        return require_int(value, name, 1)
    return None


@dataclass(frozen=True, slots=True)
class Generation:
    prompt_tokens: int
    max_tokens: int
    min_tokens: int
    ignore_eos: bool
    stream: bool
    include_usage: bool

    def output_tokens(self, rng: random.Random) -> int:
        """Exactly max_tokens when pinned, else a seeded early stop at or after min_tokens."""
        if self.ignore_eos or self.min_tokens >= self.max_tokens:
            return self.max_tokens
        return rng.randint(max(self.min_tokens, 1), self.max_tokens)


def parse_generation(body: Any, chat: bool) -> Generation:
    if not isinstance(body, Mapping):
        raise ValueError("request body must be a JSON object")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list")
        if not all(isinstance(message, Mapping) for message in messages):
            raise ValueError("each message must be an object")
        prompt_tokens = sum(_count_words(message.get("content") or "") for message in messages)
    else:
        if "prompt" not in body:
            raise ValueError("prompt is required")
        prompt_tokens = _count_words(body["prompt"])
    if prompt_tokens < 1:
        raise ValueError("the prompt must contain at least one token")
    max_tokens = _positive_int(body, "max_tokens", "max_completion_tokens") or DEFAULT_MAX_TOKENS
    min_tokens = _positive_int(body, "min_tokens") or 0
    if min_tokens > max_tokens:
        raise ValueError(f"min_tokens ({min_tokens}) must not exceed max_tokens ({max_tokens})")
    stream_options = body.get("stream_options") or {}
    if not isinstance(stream_options, Mapping):
        raise ValueError("stream_options must be an object")
    return Generation(
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=bool(body.get("ignore_eos", False)),
        stream=bool(body.get("stream", False)),
        include_usage=bool(stream_options.get("include_usage", False)),
    )
