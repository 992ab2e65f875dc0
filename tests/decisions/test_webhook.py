"""The webhook against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from apps.decisions.tasks import sweep
from apps.decisions.webhook import webhook_post
from tests.decisions.factories import accepted


class Receiver(BaseHTTPRequestHandler):
    bodies: list[dict] = []
    status = 204

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def receiver():
    Receiver.bodies, Receiver.status = [], 204
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", Receiver
    server.shutdown()
    server.server_close()


def test_a_fired_trigger_posts_json_after_the_commit(
    receiver, settings, acme, alice, approver_bob, selection, django_capture_on_commit_callbacks
):
    url, handler = receiver
    settings.DECISIONS_WEBHOOK_URL = url
    record = accepted(alice, approver_bob, acme, selection)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sweep(now=record.decided_at.replace(year=record.decided_at.year + 1))
    assert handler.bodies == []
    for callback in callbacks:
        callback()
    [body] = handler.bodies
    assert body["event"] == "decision.retest_needed"
    assert body["record"] == "DR-1" and body["team"] == "acme"
    assert [trigger["kind"] for trigger in body["triggers"]] == ["age"]


def test_a_failing_receiver_is_logged_not_raised(receiver, caplog):
    url, handler = receiver
    handler.status = 500
    assert webhook_post(url, {"event": "x"}) is False
    assert "failed" in caplog.text


def test_an_unreachable_receiver_is_logged_not_raised(caplog):
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    port = server.server_port
    server.server_close()  # nothing listens there now
    assert webhook_post(f"http://127.0.0.1:{port}/", {"event": "x"}, timeout_s=2) is False
    assert "failed" in caplog.text


def test_a_url_that_is_not_http_is_refused():
    assert webhook_post("file:///etc/passwd", {"event": "x"}) is False
