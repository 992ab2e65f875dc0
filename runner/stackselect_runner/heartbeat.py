"""The heartbeat thread: keeps the attempt's lease alive and brings cancel requests back.

One thread per runner process. It beats with `attempt_id: null` while idle; the job runner
`track`s an attempt for the duration of a job, and the thread then carries that attempt's
latest progress and sets the job's cancel event when the server answers `cancel: true`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from stackselect_runner.api import ApiError, CredentialRejected

logger = logging.getLogger(__name__)


class HeartbeatApi(Protocol):
    def heartbeat(
        self, attempt_id: int | None, progress: Mapping[str, Any] | None
    ) -> dict[str, Any]: ...


class Heartbeat:
    """Beats every `interval_s`, and at once when an attempt starts being tracked."""

    def __init__(self, api: HeartbeatApi, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"heartbeat interval must be > 0, got {interval_s}")
        self.api = api
        self.interval_s = interval_s
        self.last_answer: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._attempt_id: int | None = None
        self._progress: dict[str, Any] | None = None
        self._cancel = threading.Event()
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
        with self._lock:
            self._attempt_id = attempt_id
            self._progress = None
            self._cancel = threading.Event()
            cancel = self._cancel
        self._wake.set()
        return cancel

    def untrack(self) -> None:
        with self._lock:
            self._attempt_id = None
            self._progress = None

    def set_progress(self, progress: Mapping[str, Any]) -> None:
        with self._lock:
            self._progress = dict(progress)

    def beat(self) -> None:
        """One heartbeat now; failures are logged, the lease tolerates a few missed beats."""
        with self._lock:
            attempt_id, progress, cancel = self._attempt_id, self._progress, self._cancel
        try:
            answer = self.api.heartbeat(attempt_id, progress)
        except CredentialRejected as exc:
            logger.error("heartbeat refused, this runner's credential is revoked: %s", exc.detail)
            return
        except ApiError as exc:
            logger.warning("heartbeat failed: %s", exc)
            return
        self.last_answer = answer
        if attempt_id is not None and answer.get("cancel"):
            logger.info("attempt %s: cancel requested by the server", attempt_id)
            cancel.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            self.beat()
            self._wake.wait(self.interval_s)
