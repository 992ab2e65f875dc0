"""A small synchronous client for the runner REST API (`/api/runner/v1/`, docs/runner-protocol.md).

Synchronous on purpose: it runs in the Celery task thread and the heartbeat thread, never in
the harness's event loop. Connection errors and 5xx answers are retried with capped exponential
backoff and jitter; 4xx answers are not, because repeating them cannot change the outcome.
"""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

API_PREFIX = "/api/runner/v1"
DEFAULT_TIMEOUT_S = 30.0

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An answer the caller must handle; `status` is None when the server was not reached."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body

    @property
    def detail(self) -> str:
        """The server's own words when it gave any (DRF puts them in `detail`)."""
        if isinstance(self.body, Mapping):
            for key in ("detail", "message", "error", "code"):
                if self.body.get(key):
                    return str(self.body[key])
            if self.body:  # DRF validation errors: {"field": ["message", ...]}
                return "; ".join(f"{field}: {_words(value)}" for field, value in self.body.items())
        if isinstance(self.body, str) and self.body.strip():
            return self.body.strip()[:500]
        return str(self)

    def describe(self) -> str:
        """What failed and, when the server said something, its words."""
        detail = self.detail
        return str(self) if detail == str(self) else f"{self}: {detail}"


def _words(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


class CredentialRejected(ApiError):
    """401: the token or credential is wrong, expired, rotated or revoked."""


class Conflict(ApiError):
    """409: the server refused a state change; `code` says why (e.g. `already_claimed`)."""

    @property
    def code(self) -> str | None:
        return (
            str(self.body["code"])
            if isinstance(self.body, Mapping) and "code" in self.body
            else None
        )


class ApiUnreachable(ApiError):
    """No answer after every retry (connection refused, timeout, or 5xx each time)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most `attempts` tries; the n-th wait is up to `base_delay_s * 2**n`, capped."""

    attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delay(self, retry: int) -> float:
        """Equal jitter: half the capped delay plus a random half, so runners do not stampede."""
        capped = min(self.max_delay_s, self.base_delay_s * 2**retry)
        return capped / 2 + random.uniform(0, capped / 2)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)
# A missed beat is retried by the next one, so a beat never blocks for long.
HEARTBEAT_RETRY = RetryPolicy(attempts=2)


class RunnerApiClient(Protocol):
    """What the job runner needs from the API; tests may pass any object that has it."""

    def claim(self, attempt_id: int) -> dict[str, Any]: ...

    def job_spec(self, attempt_id: int) -> dict[str, Any]: ...

    def heartbeat(self, attempts: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...

    def progress(self, attempt_id: int, progress: Mapping[str, Any]) -> None: ...

    def append_log(self, attempt_id: int, offset: int, text: str) -> int: ...

    def upload_results(
        self, attempt_id: int, payload: Mapping[str, Any], idempotency_key: str
    ) -> dict[str, Any]: ...

    def finish(self, attempt_id: int, state: str, reason: str) -> None: ...


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _http_error(status: int, body: Any, method: str, path: str) -> ApiError:
    message = f"{method} {path}: HTTP {status}"
    if status == 401:
        return CredentialRejected(message, status, body)
    if status == 409:
        return Conflict(message, status, body)
    return ApiError(message, status, body)


class RunnerApi:
    """`Authorization: Runner <credential>` on every call but enrollment; JSON in and out."""

    def __init__(
        self,
        base_url: str,
        credential: str | None = None,
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.credential = credential
        self.retry = retry
        self.timeout_s = timeout_s
        self._sleep = sleep

    def _send_once(self, request: urllib.request.Request) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.status, _decode(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, _decode(error.read())

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        gzip_body: bool = False,
        headers: Mapping[str, str] | None = None,
        authenticated: bool = True,
        retry: RetryPolicy | None = None,
    ) -> Any:
        """Send one call, retrying connection errors and 5xx; raise ApiError for the rest."""
        all_headers = {"Accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
            if gzip_body:
                data = gzip.compress(data)
                all_headers["Content-Encoding"] = "gzip"
        if authenticated:
            if not self.credential:
                raise ValueError("this call needs a runner credential; enroll first")
            all_headers["Authorization"] = f"Runner {self.credential}"
        url = f"{self.base_url}{API_PREFIX}/{path.lstrip('/')}"
        policy = retry or self.retry
        failure = "no attempt made"
        for attempt in range(policy.attempts):
            if attempt:
                self._sleep(policy.delay(attempt - 1))
            request = urllib.request.Request(url, data=data, headers=all_headers, method=method)
            try:
                status, answer = self._send_once(request)
            except (OSError, http.client.HTTPException) as exc:
                failure = f"{type(exc).__name__}: {exc}"
                logger.warning("%s %s failed (%s), try %d", method, path, failure, attempt + 1)
                continue
            if status >= 500:
                failure = f"HTTP {status}"
                logger.warning("%s %s answered %d, try %d", method, path, status, attempt + 1)
                continue
            if status >= 400:
                raise _http_error(status, answer, method, path)
            return answer
        raise ApiUnreachable(
            f"{method} {path}: no answer after {policy.attempts} tries ({failure})"
        )

    # Calls of docs/runner-protocol.md, in the order a runner makes them.

    def enroll(self, token: str, name: str, probe: Mapping[str, Any]) -> dict[str, Any]:
        body = {"token": token, "name": name, "probe": dict(probe)}
        return self.request("POST", "enroll", body, authenticated=False)

    def send_probe(self, probe: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", "probe", {"probe": dict(probe)}) or {}

    def heartbeat(
        self,
        attempts: Sequence[Mapping[str, Any]],
        *,
        retry: RetryPolicy = HEARTBEAT_RETRY,
    ) -> dict[str, Any]:
        """Beat for every attempt this runner holds (`[{attempt_id, progress}]`, may be empty).

        With exactly one attempt the single-attempt fields are sent too, so a server that
        predates `attempts` still extends its lease.
        """
        single = attempts[0] if len(attempts) == 1 else {}
        body = {
            "attempts": [dict(attempt) for attempt in attempts],
            "attempt_id": single.get("attempt_id"),
            "progress": single.get("progress"),
        }
        return self.request("POST", "heartbeat", body, retry=retry) or {}

    def claim(self, attempt_id: int) -> dict[str, Any]:
        return self.request("POST", f"attempts/{attempt_id}/claim", {})

    def job_spec(self, attempt_id: int) -> dict[str, Any]:
        return self.request("GET", f"attempts/{attempt_id}/spec")

    def progress(self, attempt_id: int, progress: Mapping[str, Any]) -> None:
        self.request("POST", f"attempts/{attempt_id}/progress", progress)

    def append_log(self, attempt_id: int, offset: int, text: str) -> int:
        """Append at `offset`; returns the next offset (a Conflict carries the expected one)."""
        answer = self.request(
            "POST", f"attempts/{attempt_id}/log", {"offset": offset, "text": text}
        )
        return int(answer["next_offset"])

    def upload_results(
        self, attempt_id: int, payload: Mapping[str, Any], idempotency_key: str
    ) -> dict[str, Any]:
        return (
            self.request(
                "POST",
                f"attempts/{attempt_id}/results",
                payload,
                gzip_body=True,
                headers={"Idempotency-Key": idempotency_key},
            )
            or {}
        )

    def upload_quality(self, attempt_id: int, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The quality probe's outputs; sending the same attempt's probe again replaces it."""
        return self.request("POST", f"attempts/{attempt_id}/quality", payload) or {}

    def finish(self, attempt_id: int, state: str, reason: str) -> None:
        self.request("POST", f"attempts/{attempt_id}/finish", {"state": state, "reason": reason})
