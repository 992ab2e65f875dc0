"""An in-process stand-in for the SERVER's runner API (docs/runner-protocol.md), for agent tests.

It follows the protocol's rules that the agent depends on (claim once, log offsets, idempotent
uploads, cancel through heartbeats) and records every call. It stands in for the web app only
in these unit tests; end-to-end tests run the agent against the real Django server.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CREDENTIAL = "ssr_abcdef12_s3cret"
PREFIX = "/api/runner/v1"


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeRunnerServer:
    """Knobs: `job_spec`, `claim_refusal`, `cancel_when_progress`, `enroll_refusal`, `failures`,
    `probe_queues` (the queues a probe earns; default: `queues`, whatever the probe)."""

    job_spec: dict[str, Any] = field(default_factory=dict)
    claim_refusal: str | None = None
    cancel_when_progress: bool = False
    enroll_refusal: str | None = None
    enroll_refusal_status: int = 403
    queues: list[str] = field(default_factory=lambda: ["runner.5", "pool.1.h100-sxm.1"])
    probe_queues: Callable[[dict[str, Any]], list[str]] | None = None
    # path suffix -> how many times to answer 503 before answering normally
    failures: dict[str, int] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    logs: dict[int, str] = field(default_factory=dict)
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)
    url: str = ""

    def calls_to(self, suffix: str) -> list[Call]:
        return [call for call in self.calls if call.path.endswith(suffix)]

    def _cancel_requested(self, attempt_id: int | None) -> bool:
        if not self.cancel_when_progress or attempt_id is None:
            return False
        return any(call.body.get("done", 0) >= 1 for call in self.calls_to("/progress"))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()  # aiohttp undoes Content-Encoding: gzip itself
        body = json.loads(raw) if raw else None
        path = request.path.removeprefix(PREFIX)
        self.calls.append(Call(request.method, path, dict(request.headers), body))
        for suffix, remaining in self.failures.items():
            if path.endswith(suffix) and remaining > 0:
                self.failures[suffix] = remaining - 1
                return web.json_response({"detail": "try later"}, status=503)
        if path == "/enroll":
            return self._enroll(body)
        if request.headers.get("Authorization") != f"Runner {CREDENTIAL}":
            return web.json_response({"detail": "Invalid runner credential."}, status=401)
        return self._route(request, path, body)

    def _enroll(self, body: dict[str, Any]) -> web.Response:
        if self.enroll_refusal:
            return web.json_response(
                {"detail": self.enroll_refusal}, status=self.enroll_refusal_status
            )
        answer = {
            "runner_id": 5,
            "credential": CREDENTIAL,
            "broker_url": "redis://:hunter2@127.0.0.1:6379/0",
            "queues": self.queues,
            "heartbeat_interval_s": 10,
        }
        return web.json_response(answer, status=201)

    def _route(self, request: web.Request, path: str, body: Any) -> web.Response:
        parts = path.strip("/").split("/")
        if parts == ["probe"]:
            if not isinstance(body.get("probe"), dict):
                return web.json_response({"probe": ["This field is required."]}, status=400)
            if self.probe_queues:  # later heartbeats answer them too, as the server's do
                self.queues = self.probe_queues(body["probe"])
            return web.json_response({"queues": self.queues, "labels": {}})
        if parts == ["heartbeat"]:
            cancel = self._cancel_requested(body["attempt_id"])
            return web.json_response(
                {
                    "cancel": cancel,
                    "lease_expires_at": "2030-01-01T00:00:00Z",
                    "queues": self.queues,
                }
            )
        attempt_id, action = int(parts[1]), parts[2]
        if action == "claim":
            if self.claim_refusal or attempt_id in self.claimed:
                code = self.claim_refusal or "already_claimed"
                return web.json_response({"code": code, "detail": code}, status=409)
            self.claimed.add(attempt_id)
            return web.json_response({**self.job_spec, "attempt_id": attempt_id})
        if action == "log":
            return self._append_log(attempt_id, body)
        if action == "results":
            key = request.headers["Idempotency-Key"]
            if key in self.uploads:
                return web.json_response({"stored": False}, status=200)
            self.uploads[key] = body
            return web.json_response({"stored": True}, status=201)
        return web.json_response({})

    def _append_log(self, attempt_id: int, body: dict[str, Any]) -> web.Response:
        stored = self.logs.get(attempt_id, "")
        if body["offset"] != len(stored):
            return web.json_response(
                {"code": "offset_mismatch", "expected_offset": len(stored)}, status=409
            )
        self.logs[attempt_id] = stored + body["text"]
        return web.json_response({"next_offset": len(self.logs[attempt_id])})


def unused_loopback_url() -> str:
    """A URL where nothing listens (the port was free a moment ago)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{closed.getsockname()[1]}"


@contextmanager
def serve(server: FakeRunnerServer) -> Iterator[FakeRunnerServer]:
    """Serve on a free loopback port from a background thread's event loop."""
    app = web.Application()
    app.router.add_route("*", PREFIX + "/{tail:.*}", server._handle)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.SockSite(runner, listener).start())
        started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
