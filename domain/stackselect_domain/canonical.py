"""One canonical JSON form and its hash, for everything whose identity is its content.

The audit chain, evidence identities, plan identities and decision baselines all hash with
these two functions, so the same value always gets the same digest wherever it is computed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, UTF-8 kept; values JSON lacks (dates) become strings."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=str,
    )


def canonical_hash(value: Any, *, prefix: str = "") -> str:
    """sha256 (hex) of `prefix` followed by the canonical JSON of `value`."""
    return hashlib.sha256((prefix + canonical_json(value)).encode("utf-8")).hexdigest()
