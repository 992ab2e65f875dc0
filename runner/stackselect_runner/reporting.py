"""Progress and log reporting for a running attempt, off the measuring thread.

The harness calls `update` from its event loop once per finished request, so `update` only
stores the numbers; a background thread posts the latest progress (when it changed) and ships
the engine log every `interval_s`. The heartbeat carries the same progress.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from stackselect_runner.api import ApiError
from stackselect_runner.heartbeat import Heartbeat
from stackselect_runner.logship import LogShipper

logger = logging.getLogger(__name__)


class ProgressApi(Protocol):
    def progress(self, attempt_id: int, progress: Mapping[str, Any]) -> None: ...


class Reporter:
    def __init__(
        self,
        api: ProgressApi,
        attempt_id: int,
        shipper: LogShipper,
        heartbeat: Heartbeat,
        interval_s: float,
    ) -> None:
        self.api = api
        self.attempt_id = attempt_id
        self.shipper = shipper
        self.heartbeat = heartbeat
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._latest: dict[str, Any] | None = None
        self._posted: dict[str, Any] | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="runner-reporter", daemon=True)

    def __enter__(self) -> Reporter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._thread.join()
        self.flush()

    def update(self, load_point: int | None, done: int, total: int, message: str) -> None:
        progress = {"load_point": load_point, "done": done, "total": total, "message": message}
        with self._lock:
            self._latest = progress
        self.heartbeat.set_progress(self.attempt_id, progress)

    def flush(self) -> None:
        """Post the latest progress if it changed, then ship the new log text."""
        with self._flush_lock:
            with self._lock:
                latest = self._latest
            if latest is not None and latest != self._posted:
                try:
                    self.api.progress(self.attempt_id, latest)
                    self._posted = latest
                except ApiError as exc:
                    logger.warning("progress report failed: %s", exc)
            self.shipper.ship()

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.flush()
