"""The runner API client: headers, gzip bodies, typed errors and bounded retries."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from stackselect_runner.api import (
    ApiError,
    ApiUnreachable,
    Conflict,
    CredentialRejected,
    RetryPolicy,
    RunnerApi,
)

from .fake_api import unused_loopback_url


class ScriptedServer(ThreadingHTTPServer):
    """Answers each request with the next (status, body) of `script` and keeps raw requests."""

    def __init__(self, script: list[tuple[int, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.script = script
        self.received: list[tuple[str, dict[str, str], bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.server.received.append((self.path, dict(self.headers), self.rfile.read(length)))
        status, body = self.server.script.pop(0)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        """Quiet."""


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer([])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def client(url: str, sleeps: list[float], attempts: int = 4) -> RunnerApi:
    policy = RetryPolicy(attempts=attempts, base_delay_s=1.0, max_delay_s=3.0)
    return RunnerApi(url, "ssr_abcdef12_secret", retry=policy, sleep=sleeps.append)


def test_uploads_are_gzipped_and_carry_the_credential_and_the_idempotency_key(
    scripted: ScriptedServer,
) -> None:
    scripted.script = [(201, {"stored": True})]
    answer = client(scripted.url, []).upload_results(7, {"records": [1, 2]}, "key-1")
    assert answer == {"stored": True}
    path, headers, raw = scripted.received[0]
    assert path == "/api/runner/v1/attempts/7/results"
    assert headers["Authorization"] == "Runner ssr_abcdef12_secret"
    assert headers["Idempotency-Key"] == "key-1"
    assert headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(raw)) == {"records": [1, 2]}


def test_server_errors_are_retried_with_growing_jittered_waits_until_an_answer(
    scripted: ScriptedServer,
) -> None:
    scripted.script = [(503, {}), (502, {}), (500, {}), (200, {"next_offset": 5})]
    sleeps: list[float] = []
    assert client(scripted.url, sleeps).append_log(7, 0, "hello") == 5
    # Equal jitter: wait n lies in [cap/2, cap] with cap = min(3, 1 * 2**n).
    assert len(sleeps) == 3
    for wait, cap in zip(sleeps, (1.0, 2.0, 3.0), strict=True):
        assert cap / 2 <= wait <= cap


def test_a_server_that_keeps_failing_gives_up_after_the_bounded_number_of_tries(
    scripted: ScriptedServer,
) -> None:
    scripted.script = [(503, {})] * 3
    sleeps: list[float] = []
    with pytest.raises(ApiUnreachable, match="3 tries"):
        client(scripted.url, sleeps, attempts=3).finish(7, "succeeded", "")
    assert len(scripted.received) == 3
    assert len(sleeps) == 2


def test_a_refused_connection_is_retried_then_reported_unreachable() -> None:
    sleeps: list[float] = []
    with pytest.raises(ApiUnreachable) as error:
        client(unused_loopback_url(), sleeps, attempts=2).claim(7)
    assert error.value.status is None
    assert len(sleeps) == 1


def test_client_errors_are_typed_and_never_retried(scripted: ScriptedServer) -> None:
    scripted.script = [
        (401, {"detail": "Credential revoked."}),
        (409, {"code": "already_claimed", "detail": "claimed by runner 4"}),
        (400, {"offset": ["Must be a whole number >= 0."], "text": ["Must be a string."]}),
    ]
    api = client(scripted.url, [])
    with pytest.raises(CredentialRejected) as rejected:
        api.claim(7)
    assert rejected.value.detail == "Credential revoked."
    with pytest.raises(Conflict) as conflict:
        api.claim(7)
    assert conflict.value.code == "already_claimed"
    with pytest.raises(ApiError) as bad:
        api.claim(7)
    assert bad.value.status == 400
    assert bad.value.detail == "offset: Must be a whole number >= 0.; text: Must be a string."
    assert len(scripted.received) == 3


def test_enrollment_is_the_one_call_without_a_credential(scripted: ScriptedServer) -> None:
    scripted.script = [(201, {"runner_id": 1})]
    RunnerApi(scripted.url).enroll("sse_abcdefgh_tok", "gpu-box-1", {"gpu_count": 0})
    path, headers, raw = scripted.received[0]
    assert path == "/api/runner/v1/enroll"
    assert "Authorization" not in headers
    assert json.loads(raw) == {
        "token": "sse_abcdefgh_tok",
        "name": "gpu-box-1",
        "probe": {"gpu_count": 0},
    }
    with pytest.raises(ValueError, match="credential"):
        RunnerApi(scripted.url).claim(1)
