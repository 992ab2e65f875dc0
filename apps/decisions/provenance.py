"""From a record back to its sources: who wrote the goal, which catalog cells and releases the
candidates used, which runner measured which result (with the raw upload's checksum), who
proposed and approved it, and whether the audit chain still verifies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.audit.chain import ChainBreak
from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_chain_first_break
from apps.decisions.export import username_of
from apps.decisions.models import DecisionRecord

LIFECYCLE_ACTIONS = (
    "decision.create",
    "decision.update",
    "decision.propose",
    "decision.accept",
    "decision.reject",
    "decision.superseded",
    "decision.deprecate",
)


@dataclass(frozen=True)
class Provenance:
    selection_created_by: str | None
    selection_created_at: Any
    cells: list[dict[str, Any]]
    releases: list[dict[str, Any]]
    results: list[dict[str, Any]]
    lifecycle: list[AuditEvent]
    chain_break: ChainBreak | None

    def actor_of(self, action: str) -> str | None:
        """The last person who did `action` according to the audit trail."""
        names = [event.actor_name for event in self.lifecycle if event.action == action]
        return names[-1] if names else None

    @property
    def proposed_by(self) -> str | None:
        return self.actor_of("decision.propose")

    @property
    def approved_by(self) -> str | None:
        return self.actor_of("decision.accept")


def _selection_creation(record: DecisionRecord) -> AuditEvent | None:
    return (
        AuditEvent.objects.filter(
            action="selection.create",
            object_type="selections.selection",
            object_id=str(record.goal["selection_id"]),
        )
        .order_by("id")
        .first()
    )


def _cells(record: DecisionRecord) -> list[dict[str, Any]]:
    seen: dict[int, dict[str, Any]] = {}
    for entry in record.candidates:
        for cell in entry["capabilities"]:
            seen.setdefault(cell["id"], {**cell, "used_by": []})["used_by"].append(entry["key"])
    return [seen[cell_id] for cell_id in sorted(seen)]


def _results(record: DecisionRecord) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run["run_id"],
            "candidate_key": run["candidate_key"],
            "runner": run["runner"],
            "source": run["source"],
            "tool": run["tool"],
            "plan_id": run["plan_id"],
            "identity_fingerprint": run["identity_fingerprint"],
            "checksums": run["raw_checksums"],
        }
        for run in record.evidence
    ]


def record_provenance(record: DecisionRecord) -> Provenance:
    creation = _selection_creation(record)
    lifecycle = AuditEvent.objects.filter(
        object_type=DecisionRecord._meta.label_lower,
        object_id=str(record.pk),
        action__in=LIFECYCLE_ACTIONS,
    ).order_by("id")
    author = record.selection.created_by if record.selection else None
    return Provenance(
        selection_created_by=creation.actor_name if creation else username_of(author),
        selection_created_at=creation.occurred_at if creation else None,
        cells=_cells(record),
        releases=[{**entry["release"], "key": entry["key"]} for entry in record.candidates],
        results=_results(record),
        lifecycle=list(lifecycle),
        chain_break=audit_chain_first_break(),
    )
