"""The curation rule every path (form, admin, API, import) applies to a cell's maturity.

A maturity is a claim about a project, so changing it without pointing at what changed would
make the matrix drift away from its sources. No Django here: the rule is plain values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class CellEvidence:
    maturity: str
    evidence_url: str
    as_of: date | None


def maturity_change_errors(*, before: CellEvidence, after: CellEvidence) -> dict[str, str]:
    """Field errors when `after` changes the maturity of `before` without new evidence.

    New evidence is a different evidence URL or a later as_of date; both must be present.
    """
    if after.maturity == before.maturity:
        return {}
    errors: dict[str, str] = {}
    if not after.evidence_url:
        errors["evidence_url"] = "A maturity change needs the URL of the evidence."
    if after.as_of is None:
        errors["as_of"] = "A maturity change needs the date the evidence was checked (as_of)."
    if errors:
        return errors
    same_url = after.evidence_url == before.evidence_url
    not_later = before.as_of is not None and after.as_of <= before.as_of
    if same_url and not_later:
        errors["evidence_url"] = (
            f"A maturity change ({before.maturity} to {after.maturity}) needs new evidence: "
            f"a different evidence URL or an as_of later than {before.as_of.isoformat()}."
        )
    return errors
