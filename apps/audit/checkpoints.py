"""Checkpoints of the chain's head in an append-only file outside the database.

Whoever owns the audit table can rewrite it and recompute every hash, so the chain alone proves
nothing against its owner. Each successful verify (``audit_verify`` and the beat task) appends
one JSON line with the head it checked and the (id, hash) of every event no earlier checkpoint
recorded; the next verify must find that head again, at the same id, with the same hash and
count, and every recorded event with its recorded hash. Keep the file where the database owner
cannot write (`AUDIT_CHECKPOINT_FILE`, README).
"""

from __future__ import annotations

import collections
import json
import os
from dataclasses import asdict, replace
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from apps.audit.chain import Checkpoint

_FIELDS = ("first_id", "last_id", "count", "head_hash", "at")


class CheckpointFileError(Exception):
    """The checkpoint file exists but cannot be read as checkpoints: never treated as empty."""


def checkpoint_path() -> Path:
    return Path(settings.AUDIT_CHECKPOINT_FILE)


def _parsed(path: Path, number: int, line: str) -> Checkpoint:
    try:
        entry = json.loads(line)
        hashes = tuple((int(id_), str(hash_)) for id_, hash_ in entry.get("hashes", ()))
        return Checkpoint(**{name: entry[name] for name in _FIELDS}, hashes=hashes)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CheckpointFileError(f"{path} line {number} is not a checkpoint") from exc


def read_checkpoints() -> list[Checkpoint]:
    """Every checkpoint in the file, oldest first; none when the file does not exist yet."""
    path = checkpoint_path()
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as lines:
        return [_parsed(path, number, line) for number, line in enumerate(lines, start=1)]


def newest_checkpoint() -> Checkpoint | None:
    """The last line only (checkpoints are appended in chain order): what a page view needs,
    without decoding every event hash the file has recorded."""
    path = checkpoint_path()
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as lines:
        numbered = collections.deque(enumerate(lines, start=1), maxlen=1)
    return _parsed(path, *numbered[0]) if numbered else None


def append_checkpoint(head: Checkpoint) -> Checkpoint:
    """Append one line (a single O_APPEND write, flushed to disk) stamped with the time now."""
    stamped = replace(head, at=timezone.now().isoformat(timespec="seconds"))
    path = checkpoint_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(asdict(stamped), sort_keys=True) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(descriptor, line)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return stamped
