"""Writes a person makes: importing another benchmark tool's result files as evidence."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from stackselect_domain.identity import fingerprint

from apps.accounts.choices import Role
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.core.parsers import JsonBodyError, check_values
from apps.evidence.choices import RunSource
from apps.evidence.importers import ImportedRun
from apps.evidence.models import EvidenceRun, LoadPointResult
from apps.evidence.run_identity import merged_identity
from apps.evidence.sample_store import store_samples
from apps.evidence.summaries import slo_of, summarise_result
from apps.evidence.tool_files import TOOLS, ImportOptions, read_tool_files
from apps.selections.models import Candidate, Selection

# A ValueError whose message starts with one of these names that field; any other, the files.
_OPTION_FIELDS = ("tool", "load_point", "files")


@dataclass(frozen=True)
class RawFile:
    """One uploaded file: its name as sent and its bytes."""

    name: str
    content: bytes

    def checksum(self, role: str) -> dict[str, Any]:
        digest = hashlib.sha256(self.content).hexdigest()
        return {"role": role, "name": self.name, "sha256": digest, "bytes": len(self.content)}


def _read(tool: str, files: Mapping[str, RawFile], options: ImportOptions) -> ImportedRun:
    try:
        return read_tool_files(tool, {role: f.content for role, f in files.items()}, options)
    except ValueError as error:
        field = str(error).split(":", 1)[0]
        field = field if field in _OPTION_FIELDS else "files"
        raise ValidationError({field: str(error)}) from error


def _storable(identity: Mapping[str, Any], *, field: str, source: str = "") -> None:
    """Refuse an identity value no JSON column holds (a NUL in a model name or a version,
    an infinite number), naming where it is and, for `field` "files", which files gave it."""
    try:
        check_values({"identity": dict(identity)})
    except JsonBodyError as error:
        raise ValidationError({field: f"{source}{error}"}) from error


def _candidate(selection: Selection, candidate_id: int | None) -> Candidate | None:
    if candidate_id is None:
        return None
    candidate = Candidate.objects.filter(selection=selection, pk=candidate_id).first()
    if candidate is None:
        raise ValidationError({"candidate": "Not a candidate of this selection."})
    return candidate


@transaction.atomic
def import_tool_results(
    *,
    actor_user: Any,
    team: Any,
    selection_id: int,
    tool: str,
    files: Mapping[str, RawFile],
    identity: Mapping[str, Any] | None = None,
    candidate_id: int | None = None,
    options: ImportOptions | None = None,
) -> EvidenceRun:
    """One EvidenceRun (source=import) with its load points, samples and summaries.

    Bad files, a contradictory identity or files imported before raise ValidationError naming
    the field; the transaction then stores nothing.
    """
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    selection = get_scoped_or_404(Selection.objects.all(), team, pk=selection_id)
    candidate = _candidate(selection, candidate_id)
    imported = _read(tool, files, options or ImportOptions())
    _storable(identity or {}, field="identity")
    _storable(imported.identity, field="files", source=f"the {TOOLS[tool].label} files give ")
    try:
        full_identity = merged_identity(
            stated=identity or {},
            from_files=imported.identity,
            stack=candidate.stack if candidate else None,
        )
    except ValueError as error:
        raise ValidationError({"identity": str(error)}) from error
    checksums = [raw.checksum(role) for role, raw in sorted(files.items())]
    earlier = EvidenceRun.objects.filter(team=team, raw_checksums=checksums).first()
    if earlier is not None:
        raise ValidationError({"files": f"These files were imported already (run {earlier.pk})."})
    run = EvidenceRun.objects.create(
        team=team,
        selection=selection,
        candidate=candidate,
        source=RunSource.IMPORT,
        tool=TOOLS[tool].label,
        tool_version=str(full_identity.get("harness_version") or "")[:100],
        identity=full_identity,
        identity_fingerprint=fingerprint(full_identity),
        gpu_count=full_identity.get("gpu_count"),
        raw_checksums=checksums,
        notes=imported.notes,
        created_by=actor_user,
    )
    slo = slo_of(selection.slo)
    for position, samples in enumerate(imported.load_points):
        result = LoadPointResult(
            run=run,
            index=position,
            load_point=samples.load_point.as_dict(),
            duration_s=samples.duration_s,
            chunks_received=[0],
            requested_isl=imported.requested_isl,
            requested_osl=imported.requested_osl,
        )
        summarise_result(result=result, samples=samples, gpu_count=run.gpu_count, slo=slo)
        result.save()
        store_samples(result=result, samples=samples)
    audit_record(
        actor=Actor.for_user(actor_user),
        action="evidence.import",
        obj=run,
        team=team,
        after={
            "selection_id": selection.pk,
            "candidate_id": candidate.pk if candidate else None,
            "tool": run.tool,
            "tool_version": run.tool_version,
            "identity_fingerprint": run.identity_fingerprint,
            "files": checksums,
            "load_points": len(imported.load_points),
            "samples": sum(len(samples.records) for samples in imported.load_points),
        },
    )
    return run
