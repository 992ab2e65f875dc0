"""OpenAI-compatible response bodies and SSE chunks for the simulated engine.

Per-token chunks are assembled from a pre-serialised template so the engine spends its CPU
on scheduling, not on JSON encoding, keeping its own latency small at high token rates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_OUTPUT_TEXT = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima"
OUTPUT_WORDS: tuple[bytes, ...] = tuple(
    json.dumps(f" {word}").encode() for word in _OUTPUT_TEXT.split()
)
_SENTINEL = "\x00token\x00"
DONE = b"data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def output_word(position: int) -> bytes:
    """The JSON-encoded text of output token `position` (1-based)."""
    return OUTPUT_WORDS[(position - 1) % len(OUTPUT_WORDS)]


def output_text(count: int) -> str:
    return "".join(json.loads(output_word(position)) for position in range(1, count + 1))


@dataclass(frozen=True, slots=True)
class ResponseShape:
    """Identity fields shared by every chunk of one response."""

    request_id: str
    created: int
    model: str
    chat: bool

    @property
    def chunk_object(self) -> str:
        return "chat.completion.chunk" if self.chat else "text_completion"

    def _envelope(self, choices: list[dict[str, Any]], obj: str) -> dict[str, Any]:
        return {
            "id": self.request_id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }

    def _choice(self, text: Any, finish_reason: str | None) -> dict[str, Any]:
        if self.chat:
            delta = {} if text is None else {"content": text}
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish_reason}

    def token_template(self) -> tuple[bytes, bytes]:
        """(head, tail) such that head + json_string + tail is one token's SSE event."""
        event = _event(self._envelope([self._choice(_SENTINEL, None)], self.chunk_object))
        head, tail = event.split(json.dumps(_SENTINEL).encode())
        return head, tail

    def role_chunk(self) -> bytes:
        choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}
        return _event(self._envelope([{**choice, "finish_reason": None}], self.chunk_object))

    def finish_chunk(self, finish_reason: str) -> bytes:
        return _event(self._envelope([self._choice(None, finish_reason)], self.chunk_object))

    def usage_chunk(self, usage: dict[str, int]) -> bytes:
        return _event({**self._envelope([], self.chunk_object), "usage": usage})

    def full_response(self, text: str, finish_reason: str, usage: dict[str, int]) -> dict[str, Any]:
        if self.chat:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": finish_reason}
            return {**self._envelope([choice], "chat.completion"), "usage": usage}
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        return {**self._envelope([choice], "text_completion"), "usage": usage}


def usage_dict(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
