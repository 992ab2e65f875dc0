"""What a record's evidence is made of, so a dry run is never mistaken for a measurement.

Each evidence entry of a record's snapshot says its run's `mode` (measured or simulated) and
`source` (runner or import); the record's kind sums them up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models


class EvidenceKind(models.TextChoices):
    MEASURED = "measured", "Measured on real engines"
    SIMULATED = "simulated", "Simulated only: no real engine ran"
    MIXED = "mixed", "Part measured, part simulated"
    IMPORTED = "imported", "Imported from other benchmark tools"
    NONE = "none", "No evidence"


def entry_kind(entry: Mapping[str, Any]) -> str:
    if entry.get("mode") == "simulated":
        return EvidenceKind.SIMULATED
    return EvidenceKind.IMPORTED if entry.get("source") == "import" else EvidenceKind.MEASURED


def evidence_kind(entries: Iterable[Mapping[str, Any]]) -> str:
    """simulated when every run is simulated, mixed when some are; imported when every run
    was imported; measured when a runner measured real engines (imports may add to it)."""
    kinds = {entry_kind(entry) for entry in entries}
    if not kinds:
        return EvidenceKind.NONE
    if EvidenceKind.SIMULATED in kinds:
        return EvidenceKind.SIMULATED if kinds == {EvidenceKind.SIMULATED} else EvidenceKind.MIXED
    if kinds == {EvidenceKind.IMPORTED}:
        return EvidenceKind.IMPORTED
    return EvidenceKind.MEASURED
