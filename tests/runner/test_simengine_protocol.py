"""The simulated engine speaks the OpenAI-compatible protocol (in-process, loopback only)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from stackselect_runner.simengine import EngineConfig, serve_simulated_engine
from stackselect_runner.simengine.server import SIMULATED_ANSWER

from .conftest import FAST_STEP_COST, MODEL

CONFIG = EngineConfig(model=MODEL, step_cost=FAST_STEP_COST, time_scale=0.05)


async def _post(path: str, body: dict[str, Any], config: EngineConfig = CONFIG) -> tuple[int, str]:
    async with (
        serve_simulated_engine(config) as url,
        aiohttp.ClientSession() as session,
        session.post(url + path, json=body) as response,
    ):
        return response.status, await response.text()


def post(path: str, body: dict[str, Any], config: EngineConfig = CONFIG) -> tuple[int, str]:
    return asyncio.run(_post(path, body, config))


def sse_payloads(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


def test_a_streamed_completion_sends_one_chunk_per_token_then_finish_usage_and_done() -> None:
    body = {
        "model": MODEL,
        "prompt": "one two three four five",
        "max_tokens": 4,
        "stream": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    status, text = post("/v1/completions", body)
    assert status == 200
    payloads = sse_payloads(text)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(payload) for payload in payloads[:-1]]
    token_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["text"]]
    assert len(token_chunks) == 4
    assert all(c["choices"][0]["finish_reason"] is None for c in token_chunks)
    finish, usage = chunks[-2], chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "length"
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}


def test_a_streamed_chat_completion_sends_the_role_then_content_deltas() -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hello there engine"}],
        "max_tokens": 3,
        "stream": True,
        "min_tokens": 3,
    }
    status, text = post("/v1/chat/completions", body)
    chunks = [json.loads(payload) for payload in sse_payloads(text)[:-1]]
    assert status == 200
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]]
    assert len(contents) == 3 and all(contents)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert not any("usage" in c for c in chunks)


def test_a_non_streamed_completion_returns_the_text_and_usage_in_one_body() -> None:
    body = {"model": MODEL, "prompt": "a b c", "max_tokens": 5, "ignore_eos": True}
    status, text = post("/v1/completions", body)
    response = json.loads(text)
    assert status == 200
    answer = response["choices"][0]["text"]
    # A whole answer says it came from no model, then one word per output token.
    assert answer.startswith(SIMULATED_ANSWER)
    assert len(answer.removeprefix(SIMULATED_ANSWER).split()) == 5
    assert response["usage"]["prompt_tokens"] == 3


def test_without_pinning_the_output_stops_early_at_a_seeded_point_no_later_than_max() -> None:
    body = {"model": MODEL, "prompt": "a b c", "max_tokens": 40, "min_tokens": 10}

    async def lengths(seed: int) -> list[int]:
        config = EngineConfig(model=MODEL, step_cost=FAST_STEP_COST, time_scale=0.01, seed=seed)
        found = []
        async with serve_simulated_engine(config) as url, aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.post(url + "/v1/completions", json=body) as response:
                    found.append((await response.json())["usage"]["completion_tokens"])
        return found

    first, again = asyncio.run(lengths(3)), asyncio.run(lengths(3))
    assert first == again
    assert all(10 <= length <= 40 for length in first)
    assert len(set(first)) > 1


def test_an_unknown_model_is_a_404_and_a_bad_max_tokens_a_400_naming_it() -> None:
    status, _ = post("/v1/completions", {"model": "other", "prompt": "a"})
    assert status == 404
    status, text = post("/v1/completions", {"model": MODEL, "prompt": "a", "max_tokens": 0})
    assert status == 400
    assert "max_tokens" in json.loads(text)["error"]["message"]


def test_models_and_version_mark_the_engine_as_simulated() -> None:
    async def fetch() -> tuple[Any, Any]:
        async with (
            serve_simulated_engine(CONFIG) as url,
            aiohttp.ClientSession() as session,
            session.get(url + "/v1/models") as models,
            session.get(url + "/version") as version,
        ):
            return await models.json(), await version.json()

    models, version = asyncio.run(fetch())
    assert models["data"][0]["id"] == MODEL
    assert models["data"][0]["owned_by"] == "stackselect-simulated"
    assert version["version"] == "stackselect-simulated"
