"""One streamed request against an OpenAI-compatible server.

Per streamed chunk the hot path takes one `perf_counter()` and a few byte searches; JSON is
parsed only for chunks that carry no text or carry metadata (finish reason, usage, error),
so the harness's own cost stays small next to the engine's inter-token latency.
"""

from __future__ import annotations

import asyncio
import json
from time import perf_counter
from typing import Any

import aiohttp

from stackselect_runner.harness.records import RequestRecord
from stackselect_runner.harness.specs import HarnessSpec, RequestSpec

JSON_HEADERS = {"Content-Type": "application/json"}
# The chat key has no leading quote so that it also matches `"reasoning_content":`.
TEXT_KEYS: dict[str, bytes] = {"completions": b'"text":', "chat": b'content":'}
FINISH_KEY = b'"finish_reason":'
USAGE_KEY = b'"usage":'
SPACE = 32
QUOTE = 34
LETTER_N = 110


def _value_start(data: bytes, key_end: int) -> int:
    while key_end < len(data) and data[key_end] == SPACE:
        key_end += 1
    return key_end


def carries_text(data: bytes, text_key: bytes) -> bool:
    """True when some `text_key` field holds a non-empty string (handles `"k": ""`/`null`).

    For chat, reasoning tokens count as streamed text: that is what a user waiting for the
    first token experiences.
    """
    at = data.find(text_key)
    while at >= 0:
        start = _value_start(data, at + len(text_key))
        if data[start : start + 1] == b'"' and data[start + 1 : start + 2] != b'"':
            return True
        at = data.find(text_key, start)
    return False


def _has_value(data: bytes, key: bytes) -> bool:
    """True when `key` is present with a value other than null."""
    at = data.find(key)
    if at < 0:
        return False
    start = _value_start(data, at + len(key))
    return start < len(data) and data[start] != LETTER_N


def needs_parsing(data: bytes, has_text: bool) -> bool:
    return not has_text or _has_value(data, FINISH_KEY) or _has_value(data, USAGE_KEY)


def request_body(spec: HarnessSpec, request: RequestSpec, prompt: str) -> bytes:
    """The JSON body; built before the run starts so sending costs no serialisation."""
    body: dict[str, Any] = {
        "model": spec.model,
        "max_tokens": request.output_tokens,
        "stream": True,
    }
    if spec.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    options = spec.engine_options
    if options.include_usage:
        body["stream_options"] = {"include_usage": True}
    if options.ignore_eos:
        body["ignore_eos"] = True
    if options.min_tokens:
        body["min_tokens"] = request.output_tokens
    body.update(options.extra_body)
    return json.dumps(body).encode()


def _apply_metadata(record: RequestRecord, payload: dict[str, Any]) -> None:
    error = payload.get("error")
    if error is not None:
        message = error.get("message", error) if isinstance(error, dict) else error
        record.error = f"stream error: {message}"
    usage = payload.get("usage")
    if isinstance(usage, dict):
        if isinstance(usage.get("prompt_tokens"), int):
            record.input_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            record.output_tokens = usage["completion_tokens"]
    for choice in payload.get("choices") or ():
        if choice.get("finish_reason"):
            record.finish_reason = choice["finish_reason"]


class _StreamReader:
    """Turns SSE `data:` payloads into timings; one instance per request."""

    def __init__(self, record: RequestRecord, text_key: bytes, start: float) -> None:
        self.record = record
        self.text_key = text_key
        self.start = start
        self.last_text_at: float | None = None
        self.text_chunks = 0
        self.usage_seen = False

    def feed(self, data: bytes, now: float) -> bool:
        """Account for one payload received at `now`; True when the stream is over."""
        record = self.record
        if data == b"[DONE]":
            record.e2e_s = now - self.start
            if not self.usage_seen:
                record.output_tokens = self.text_chunks
            return True
        has_text = carries_text(data, self.text_key)
        if has_text:
            if self.last_text_at is None:
                record.ttft_s = now - self.start
            else:
                record.itl_s.append(now - self.last_text_at)
            self.last_text_at = now
            self.text_chunks += 1
        if needs_parsing(data, has_text):
            payload = json.loads(data)
            self.usage_seen = self.usage_seen or isinstance(payload.get("usage"), dict)
            _apply_metadata(record, payload)
            return record.error is not None
        return False


async def _consume_stream(
    response: aiohttp.ClientResponse, record: RequestRecord, text_key: bytes, start: float
) -> None:
    """Reads whatever bytes arrived (not line by line): one timestamp per network read."""
    reader = _StreamReader(record, text_key, start)
    pending = b""
    async for block in response.content.iter_any():
        now = perf_counter()
        lines = (pending + block).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data:") and reader.feed(line[5:].strip(), now):
                return
    record.error = "stream ended before [DONE]"


async def send_request(
    session: aiohttp.ClientSession,
    spec: HarnessSpec,
    request: RequestSpec,
    body: bytes,
    run_start: float,
) -> RequestRecord:
    """Send one request and record its timings; failures become the record's `error`."""
    start = perf_counter()
    record = RequestRecord(
        index=request.index, send_s=start - run_start, input_tokens=request.input_tokens
    )
    try:
        async with asyncio.timeout(spec.request_timeout_s):
            async with session.post(spec.url, data=body, headers=JSON_HEADERS) as response:
                record.status = response.status
                if response.status != 200:
                    detail = (await response.text())[:300]
                    record.error = f"HTTP {response.status}: {detail}"
                    return record
                await _consume_stream(response, record, TEXT_KEYS[spec.endpoint], start)
    except TimeoutError:
        record.error = "timeout"
    except (aiohttp.ClientError, ValueError) as exc:
        record.error = f"{type(exc).__name__}: {exc}"
    return record
