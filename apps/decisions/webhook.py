"""The optional webhook: a JSON POST after the commit, with a timeout, never raising.

A receiver that is down or slow must not undo or delay the change that fired it, so failures
are logged and dropped; the in-app notification list is the record that always exists.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)
TIMEOUT_S = 5.0


def webhook_post(url: str, payload: dict[str, Any], *, timeout_s: float = TIMEOUT_S) -> bool:
    """POST `payload` as JSON; True on a 2xx answer, False (logged) on anything else."""
    if not url.startswith(("http://", "https://")):
        logger.warning("decision webhook URL %r is not http(s); nothing sent", url)
        return False
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "StackSelect decisions"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return 200 <= response.status < 300
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        logger.warning("decision webhook to %s failed: %s", url, error)
        return False


def webhook_on_commit(payload: dict[str, Any]) -> None:
    """Send `payload` once the current transaction commits, if DECISIONS_WEBHOOK_URL is set."""
    url = settings.DECISIONS_WEBHOOK_URL
    if url:
        transaction.on_commit(lambda: webhook_post(url, payload))
