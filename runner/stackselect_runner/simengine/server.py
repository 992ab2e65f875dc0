"""The simulated engine's aiohttp application (OpenAI-compatible subset)."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from stackselect_runner.simengine.chunks import (
    DONE,
    ResponseShape,
    output_text,
    output_word,
    usage_dict,
)
from stackselect_runner.simengine.requests import Generation, parse_generation
from stackselect_runner.simengine.scheduler import FINISHED, ContinuousBatchingScheduler, Sequence
from stackselect_runner.simengine.stepcost import DEFAULT_STEP_COST, StepCost

SIMULATED_MARK = "stackselect-simulated"
# A whole (non-streamed) answer says it came from no model, so a quality probe against the
# simulated engine can never read as a measured answer.
SIMULATED_ANSWER = "[simulated engine: no model ran]"
SCHEDULER_KEY = web.AppKey("scheduler", ContinuousBatchingScheduler)
SHUTDOWN_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class EngineConfig:
    model: str = "simulated-model"
    step_cost: StepCost = field(default_factory=lambda: DEFAULT_STEP_COST)
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    time_scale: float = 1.0
    seed: int = 0

    def build_scheduler(self) -> ContinuousBatchingScheduler:
        return ContinuousBatchingScheduler(
            self.step_cost, self.max_num_seqs, self.max_num_batched_tokens, self.time_scale
        )


CONFIG_KEY = web.AppKey("config", EngineConfig)


def _error(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return web.json_response(body, status=status)


class GenerationHandler:
    """Serves one endpoint kind; request ids and early-stop points come from seeded counters."""

    def __init__(self, chat: bool, config: EngineConfig) -> None:
        self.chat = chat
        self.config = config
        self.counter = itertools.count()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body: Any = await request.json()
            generation = parse_generation(body, chat=self.chat)
        except ValueError as exc:
            return _error(400, str(exc), "invalid_request_error")
        if body.get("model") != self.config.model:
            message = f"The model `{body.get('model')}` does not exist."
            return _error(404, message, "NotFoundError")
        number = next(self.counter)
        rng = random.Random(f"{self.config.seed}:{number}")
        prefix = "chatcmpl" if self.chat else "cmpl"
        shape = ResponseShape(f"{prefix}-{number}", int(time.time()), self.config.model, self.chat)
        sequence = Sequence(generation.prompt_tokens, generation.output_tokens(rng))
        request.app[SCHEDULER_KEY].submit(sequence)
        try:
            if generation.stream:
                return await self._stream(request, generation, sequence, shape)
            return await self._complete(generation, sequence, shape)
        finally:
            if not sequence.done:
                sequence.aborted = True

    async def _stream(
        self,
        request: web.Request,
        generation: Generation,
        sequence: Sequence,
        shape: ResponseShape,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        head, tail = shape.token_template()
        with suppress(ConnectionResetError):
            for position in range(1, sequence.output_tokens + 1):
                if await sequence.tokens.get() is FINISHED:
                    return response
                if position == 1 and self.chat:
                    await response.write(shape.role_chunk())
                await response.write(head + output_word(position) + tail)
            finish = _finish_reason(generation, sequence)
            await response.write(shape.finish_chunk(finish))
            if generation.include_usage:
                usage = usage_dict(sequence.prompt_tokens, sequence.output_tokens)
                await response.write(shape.usage_chunk(usage))
            await response.write(DONE)
            await response.write_eof()
        return response

    async def _complete(
        self, generation: Generation, sequence: Sequence, shape: ResponseShape
    ) -> web.Response:
        for _ in range(sequence.output_tokens):
            if await sequence.tokens.get() is FINISHED:
                return _error(503, "engine shutting down", "ServiceUnavailable")
        usage = usage_dict(sequence.prompt_tokens, sequence.output_tokens)
        text = f"{SIMULATED_ANSWER}{output_text(sequence.output_tokens)}"
        finish = _finish_reason(generation, sequence)
        return web.json_response(shape.full_response(text, finish, usage))


def _finish_reason(generation: Generation, sequence: Sequence) -> str:
    return "length" if sequence.output_tokens >= generation.max_tokens else "stop"


async def _health(_: web.Request) -> web.Response:
    return web.Response(status=200)


async def _version(_: web.Request) -> web.Response:
    return web.json_response({"version": SIMULATED_MARK})


async def _models(request: web.Request) -> web.Response:
    config = request.app[CONFIG_KEY]
    model = {"id": config.model, "object": "model", "created": 0, "owned_by": SIMULATED_MARK}
    return web.json_response({"object": "list", "data": [model]})


async def _run_scheduler(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[SCHEDULER_KEY].run())
    yield
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task


async def _release_streams(app: web.Application) -> None:
    app[SCHEDULER_KEY].abort_all()


def build_app(config: EngineConfig) -> web.Application:
    app = web.Application()
    app[CONFIG_KEY] = config
    app[SCHEDULER_KEY] = config.build_scheduler()
    app.cleanup_ctx.append(_run_scheduler)
    app.on_shutdown.append(_release_streams)
    app.router.add_get("/health", _health)
    app.router.add_get("/version", _version)
    app.router.add_get("/v1/models", _models)
    app.router.add_post("/v1/completions", GenerationHandler(chat=False, config=config).handle)
    app.router.add_post("/v1/chat/completions", GenerationHandler(chat=True, config=config).handle)
    return app


@asynccontextmanager
async def serve_simulated_engine(
    config: EngineConfig, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Run the engine inside the caller's event loop; yields its base URL (port 0 = free)."""
    runner = web.AppRunner(build_app(config), shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_port = runner.addresses[0][1]
    try:
        yield f"http://{host}:{bound_port}"
    finally:
        await runner.cleanup()
