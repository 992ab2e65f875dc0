"""The heartbeat thread: keeps the leases of the runner's attempts alive and brings cancels back.

One thread per runner process. It beats with no attempts while idle; the job runner `track`s
each attempt for the duration of its job (several at once on a multi-GPU runner), and every
beat carries each tracked attempt's latest progress. The server answers per attempt; a
`cancel: true` sets that job's cancel event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from stackselect_runner.api import ApiError, CredentialRejected

logger = logging.getLogger(__name__)


class HeartbeatApi(Protocol):
    def heartbeat(self, attempts: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...


@dataclass
class _Tracked:
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: dict[str, Any] | None = None


def cancelled_attempts(answer: Mapping[str, Any], sent: Sequence[int]) -> set[int]:
    """The attempts the server wants stopped; a server that answers only the single-attempt
    form (`cancel` for the one attempt sent) is understood too."""
    per_attempt = answer.get("attempts")
    if isinstance(per_attempt, list):
        return {
            int(entry["attempt_id"])
            for entry in per_attempt
            if isinstance(entry, Mapping) and entry.get("cancel") and entry.get("attempt_id")
        }
    return set(sent) if len(sent) == 1 and answer.get("cancel") else set()


class Heartbeat:
    """Beats every `interval_s`, and at once when an attempt starts being tracked."""

    def __init__(self, api: HeartbeatApi, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"heartbeat interval must be > 0, got {interval_s}")
        self.api = api
        self.interval_s = interval_s
        self.last_answer: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._tracked: dict[int, _Tracked] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="runner-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def track(self, attempt_id: int) -> threading.Event:
        """Carry this attempt from now on; the returned event is set when it is cancelled."""
        tracked = _Tracked()
        with self._lock:
            self._tracked[attempt_id] = tracked
        self._wake.set()
        return tracked.cancel

    def untrack(self, attempt_id: int) -> None:
        with self._lock:
            self._tracked.pop(attempt_id, None)

    def tracked(self) -> list[int]:
        with self._lock:
            return sorted(self._tracked)

    def set_progress(self, attempt_id: int, progress: Mapping[str, Any]) -> None:
        with self._lock:
            if attempt_id in self._tracked:
                self._tracked[attempt_id].progress = dict(progress)

    def beat(self) -> None:
        """One heartbeat now; failures are logged, the lease tolerates a few missed beats."""
        with self._lock:
            snapshot = dict(self._tracked)
        attempts = [
            {"attempt_id": attempt_id, "progress": tracked.progress}
            for attempt_id, tracked in sorted(snapshot.items())
        ]
        try:
            answer = self.api.heartbeat(attempts)
        except CredentialRejected as exc:
            logger.error("heartbeat refused, this runner's credential is revoked: %s", exc.detail)
            return
        except ApiError as exc:
            logger.warning("heartbeat failed: %s", exc)
            return
        self.last_answer = answer
        for attempt_id in cancelled_attempts(answer, sorted(snapshot)):
            if attempt_id in snapshot:
                logger.info("attempt %s: cancel requested by the server", attempt_id)
                snapshot[attempt_id].cancel.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            self.beat()
            self._wake.wait(self.interval_s)
