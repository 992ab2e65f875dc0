"""Ships the engine log to the server as it grows (`POST .../log` with offsets).

The server appends only at its stored length, so a retried append that already landed
comes back as 409 with `expected_offset`; the shipper then skips what the server has
instead of sending it twice. Offsets count characters of the decoded log.
"""

from __future__ import annotations

import codecs
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from stackselect_runner.api import ApiError, Conflict

MAX_CHARS_PER_APPEND = 64 * 1024
logger = logging.getLogger(__name__)


class LogApi(Protocol):
    def append_log(self, attempt_id: int, offset: int, text: str) -> int: ...


class LogShipper:
    """Reads new bytes of `path` and appends them to the attempt's log; safe across threads."""

    def __init__(self, api: LogApi, attempt_id: int, path: Path) -> None:
        self.api = api
        self.attempt_id = attempt_id
        self.path = path
        self.offset = 0
        self._bytes_read = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._stopped = False
        self._lock = threading.Lock()

    def _read_new_text(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._bytes_read)
                chunk = handle.read()
        except FileNotFoundError:
            return
        self._bytes_read += len(chunk)
        self._pending += self._decoder.decode(chunk)

    def _resync(self, conflict: Conflict) -> bool:
        """Skip what the server already holds; False (and shipping stops) when offsets diverged."""
        body = conflict.body if isinstance(conflict.body, Mapping) else {}
        expected = body.get("expected_offset")
        ahead = expected - self.offset if isinstance(expected, int) else -1
        if ahead < 0 or ahead > len(self._pending):
            logger.warning(
                "log append refused at offset %d (%s); log shipping stops for this attempt",
                self.offset,
                conflict.detail,
            )
            self._stopped = True
            return False
        self._pending = self._pending[ahead:]
        self.offset = expected
        return True

    def ship(self) -> None:
        """Send everything written so far; API failures are logged and retried next time."""
        with self._lock:
            if self._stopped:
                return
            self._read_new_text()
            while self._pending:
                text = self._pending[:MAX_CHARS_PER_APPEND]
                try:
                    next_offset = self.api.append_log(self.attempt_id, self.offset, text)
                except Conflict as conflict:
                    if not self._resync(conflict):
                        return
                    continue
                except ApiError as exc:
                    if exc.status is None:
                        logger.warning("log append failed, will retry: %s", exc)
                        return
                    # Refused for good (e.g. the server's log is full): stop for this attempt.
                    logger.warning("log append refused: %s; log shipping stops", exc.detail)
                    self._stopped = True
                    return
                self._pending = self._pending[len(text) :]
                self.offset = next_offset
