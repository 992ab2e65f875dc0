"""The harness's cheap chunk checks against other servers' SSE spellings and failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from stackselect_runner.harness import HarnessSpec, LoadPoint, LoadPointResult, arun_load_point
from stackselect_runner.harness.streaming import TEXT_KEYS, carries_text, request_body

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def spaced_event(payload: dict[str, Any]) -> bytes:
    """Python's default json.dumps spacing (`"key": value`), unlike vLLM's compact form."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    return spaced_event(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    )


async def spaced_chat_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b": keep-alive comment\n\n")
    await response.write(chat_chunk({"role": "assistant", "content": ""}))
    await response.write(chat_chunk({"content": None, "reasoning_content": "thinking"}))
    await response.write(chat_chunk({"content": " two tokens"}))
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    await response.write(chat_chunk({"content": " last"}, finish="stop", usage=usage))
    await response.write(b"data: [DONE]\n\n")
    return response


async def server_error(_: web.Request) -> web.Response:
    return web.json_response({"error": {"message": "out of memory"}}, status=500)


async def truncated_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(chat_chunk({"content": " partial"}))
    return response


async def error_event(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(spaced_event({"error": {"message": "engine died", "code": 500}}))
    return response


def run_against(handler: Handler) -> LoadPointResult:
    async def run() -> LoadPointResult:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        request = {"index": 0, "arrival_s": 0, "input_tokens": 4, "output_tokens": 9}
        harness = {"endpoint": "chat"}
        job_spec = {"engine": {"model": "m"}, "harness": harness, "requests": [request]}
        spec = HarnessSpec.from_job_spec(job_spec, f"http://127.0.0.1:{port}")
        try:
            return await arun_load_point(spec, LoadPoint(concurrency=1))
        finally:
            await runner.cleanup()

    return asyncio.run(run())


def test_usage_from_the_finish_chunk_overrides_counts_and_reasoning_counts_as_text() -> None:
    record = run_against(spaced_chat_stream).records[0]
    assert record.error is None
    assert (record.input_tokens, record.output_tokens) == (11, 7)
    assert record.finish_reason == "stop"
    # three text-bearing chunks: reasoning, " two tokens", " last" (the role chunk is empty)
    assert len(record.itl_s) == 2
    assert record.ttft_s is not None and record.e2e_s is not None


def test_an_http_error_is_recorded_with_its_status_and_body() -> None:
    record = run_against(server_error).records[0]
    assert record.status == 500
    assert record.error is not None and record.error.startswith("HTTP 500")
    assert "out of memory" in record.error


def test_a_stream_that_ends_without_done_is_an_error() -> None:
    record = run_against(truncated_stream).records[0]
    assert record.error == "stream ended before [DONE]"
    assert record.ttft_s is not None and record.e2e_s is None


def test_an_error_event_inside_the_stream_is_recorded() -> None:
    record = run_against(error_event).records[0]
    assert record.error == "stream error: engine died"


def test_a_refused_connection_is_an_error_record() -> None:
    async def run() -> LoadPointResult:
        request = {"index": 0, "arrival_s": 0, "input_tokens": 1, "output_tokens": 1}
        job_spec = {"engine": {"model": "m"}, "requests": [request]}
        spec = HarnessSpec.from_job_spec(job_spec, "http://127.0.0.1:9")
        return await arun_load_point(spec, LoadPoint(concurrency=1))

    record = asyncio.run(run()).records[0]
    assert record.error is not None and "Connect" in record.error


@pytest.mark.parametrize(
    ("data", "kind", "expected"),
    [
        (b'{"choices":[{"text":" a","finish_reason":null}]}', "completions", True),
        (b'{"choices":[{"text": "", "finish_reason": "length"}]}', "completions", False),
        (b'{"choices":[{"delta":{"content":null}}]}', "chat", False),
        (b'{"choices":[{"delta":{"content": "\\"q"}}]}', "chat", True),
        (b'{"choices":[],"usage":{"prompt_tokens":1}}', "chat", False),
    ],
)
def test_the_text_check_reads_the_value_not_just_the_key(
    data: bytes, kind: str, expected: bool
) -> None:
    assert carries_text(data, TEXT_KEYS[kind]) is expected


def test_the_request_body_pins_the_output_length_and_asks_for_usage() -> None:
    job_spec = {
        "engine": {"model": "m"},
        "harness": {"min_tokens": True, "extra_body": {"temperature": 0}},
        "requests": [{"index": 0, "arrival_s": 0, "input_tokens": 2, "output_tokens": 12}],
    }
    spec = HarnessSpec.from_job_spec(job_spec, "http://127.0.0.1:1")
    body = json.loads(request_body(spec, spec.requests[0], "hello world"))
    assert body["prompt"] == "hello world"
    assert (body["max_tokens"], body["min_tokens"], body["ignore_eos"]) == (12, 12, True)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0
