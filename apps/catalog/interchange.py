"""The whole capability matrix as a flat table (CSV or JSON, through pandas), and the plan of
an import: every row validated, then the diff against the stored cells.

An import file is the complete matrix: a stored cell that the file lacks is removed. Rows are
numbered from 1, the first row after the CSV header or the first object of the JSON list.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import date
from typing import Any, NamedTuple

import pandas as pd
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from apps.catalog.choices import Maturity, Vendor
from apps.catalog.maturity_rule import CellEvidence, maturity_change_errors
from apps.catalog.models import Capability, EngineRelease, Feature, KernelBackend
from apps.core.parsers import NUL_REFUSED

FILE_FORMATS = ("csv", "json")
KEY_COLUMNS = ("engine", "version", "feature", "backend", "vendor", "family")
VALUE_COLUMNS = ("maturity", "note", "evidence_url", "as_of", "verified_by", "needs_review")
COLUMNS = KEY_COLUMNS + VALUE_COLUMNS
REQUIRED_COLUMNS = ("engine", "version", "feature", "maturity", "evidence_url", "as_of")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")
_url_validator = URLValidator(schemes=["http", "https"])


class CellKey(NamedTuple):
    engine: str
    version: str
    feature: str
    backend: str
    vendor: str
    family: str

    @property
    def label(self) -> str:
        scope = ", ".join(part for part in (self.backend, self.vendor, self.family) if part)
        return f"{self.engine} {self.version} · {self.feature}{f' [{scope}]' if scope else ''}"


def _key_of(cell: Capability) -> CellKey:
    return CellKey(
        cell.release.engine.slug,
        cell.release.version,
        cell.feature.key,
        cell.backend.slug if cell.backend_id else "",
        cell.vendor,
        cell.family,
    )


def _values_of(cell: Capability) -> dict[str, Any]:
    return {name: getattr(cell, name) for name in VALUE_COLUMNS}


def _stored_cells() -> dict[CellKey, Capability]:
    cells = Capability.objects.select_related("release__engine", "feature", "backend")
    return {_key_of(cell): cell for cell in cells}


# Export ------------------------------------------------------------------------------------


def matrix_frame() -> pd.DataFrame:
    """Every cell as one row, sorted by its key, with dates as ISO strings."""
    records = []
    for key, cell in sorted(_stored_cells().items()):
        values = _values_of(cell)
        values["as_of"] = cell.as_of.isoformat()
        records.append({**key._asdict(), **values})
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def export_matrix(file_format: str) -> str:
    frame = matrix_frame()
    if file_format == "csv":
        return frame.to_csv(index=False)
    if file_format == "json":
        return json.dumps(frame.to_dict(orient="records"), indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"file_format: use one of {', '.join(FILE_FORMATS)}, not {file_format!r}")


# Reading -----------------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def read_rows(content: bytes, file_format: str) -> list[dict[str, str]]:
    """The file's rows as text columns; ValueError when it is not a readable matrix table."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError("file: the file is not UTF-8 text") from error
    try:
        if file_format == "csv":
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        elif file_format == "json":
            data = json.loads(text)
            if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
                raise ValueError("file: the JSON must be a list of objects, one per cell")
            frame = pd.DataFrame.from_records(data)
        else:
            raise ValueError(f"file_format: use one of {', '.join(FILE_FORMATS)}")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, json.JSONDecodeError) as error:
        raise ValueError(f"file: cannot read it as {file_format.upper()} ({error})") from error
    missing = [name for name in REQUIRED_COLUMNS if name not in frame.columns]
    if missing:
        raise ValueError(f"file: missing column(s) {', '.join(missing)}")
    unknown = [str(name) for name in frame.columns if name not in COLUMNS]
    if unknown:
        raise ValueError(f"file: unknown column(s) {', '.join(unknown)}")
    return [
        {name: _as_text(record.get(name)) for name in COLUMNS}
        for record in frame.to_dict(orient="records")
    ]


# Planning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowError:
    row: int
    field: str
    message: str


@dataclass(frozen=True)
class CellChange:
    key: CellKey
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    capability: Capability | None = None
    refs: dict[str, Any] = field(default_factory=dict)

    @property
    def changed_fields(self) -> list[str]:
        if self.before is None or self.after is None:
            return []
        return [name for name in VALUE_COLUMNS if self.before[name] != self.after[name]]


@dataclass
class ImportPlan:
    rows: int = 0
    added: list[CellChange] = field(default_factory=list)
    changed: list[CellChange] = field(default_factory=list)
    removed: list[CellChange] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    applied: bool = False

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.removed)


class _Lookups:
    """The rows a cell can point at, read once per import."""

    def __init__(self) -> None:
        self.releases = {
            (r.engine.slug, r.version): r for r in EngineRelease.objects.select_related("engine")
        }
        self.features = {f.key: f for f in Feature.objects.all()}
        self.backends = {b.slug: b for b in KernelBackend.objects.all()}


def _parse_row(row: dict[str, str], lookups: _Lookups) -> tuple[dict, dict, dict[str, str]]:
    """(references, typed values, field errors) of one row."""
    errors: dict[str, str] = {}
    refs: dict[str, Any] = {"backend": None}
    for name in REQUIRED_COLUMNS:
        if not row[name]:
            errors[name] = f"{name} is required"
    release = lookups.releases.get((row["engine"], row["version"]))
    if row["engine"] and row["version"] and release is None:
        errors["version"] = f"no release {row['engine']} {row['version']} in the catalog"
    refs["release"] = release
    refs["feature"] = lookups.features.get(row["feature"])
    if row["feature"] and refs["feature"] is None:
        errors["feature"] = f"unknown feature key {row['feature']!r}"
    if row["backend"]:
        refs["backend"] = lookups.backends.get(row["backend"])
        if refs["backend"] is None:
            errors["backend"] = f"unknown kernel backend {row['backend']!r}"
    if row["vendor"] and row["vendor"] not in Vendor.values:
        errors["vendor"] = f"{row['vendor']!r} is not a vendor ({', '.join(Vendor.values)})"
    if row["maturity"] and row["maturity"] not in Maturity.values:
        errors["maturity"] = f"{row['maturity']!r} is not a maturity ({', '.join(Maturity.values)})"
    values: dict[str, Any] = {
        "maturity": row["maturity"],
        "note": row["note"],
        "evidence_url": row["evidence_url"],
        "verified_by": row["verified_by"],
        "as_of": None,
        "needs_review": row["needs_review"].lower() in _TRUE,
    }
    if row["evidence_url"]:
        try:
            _url_validator(row["evidence_url"])
        except ValidationError:
            errors["evidence_url"] = f"{row['evidence_url']!r} is not an http(s) URL"
    if row["as_of"]:
        try:
            values["as_of"] = date.fromisoformat(row["as_of"])
        except ValueError:
            errors["as_of"] = f"{row['as_of']!r} is not an ISO date (YYYY-MM-DD)"
    if row["needs_review"].lower() not in _TRUE + _FALSE:
        errors["needs_review"] = f"{row['needs_review']!r} is not true or false"
    errors |= {name: NUL_REFUSED for name, text in row.items() if "\x00" in text}
    return refs, values, errors


def plan_import(rows: list[dict[str, str]]) -> ImportPlan:
    """Validate every row, then diff the file against the stored cells."""
    lookups = _Lookups()
    stored = _stored_cells()
    plan = ImportPlan(rows=len(rows))
    seen: dict[CellKey, int] = {}
    for number, row in enumerate(rows, start=1):
        refs, values, errors = _parse_row(row, lookups)
        key = CellKey(*(row[name] for name in KEY_COLUMNS))
        if key in seen:
            errors["engine"] = f"the same cell as row {seen[key]}"
        seen.setdefault(key, number)
        cell = stored.get(key)
        if cell is not None and not errors:
            errors.update(
                maturity_change_errors(
                    before=CellEvidence(cell.maturity, cell.evidence_url, cell.as_of),
                    after=CellEvidence(values["maturity"], values["evidence_url"], values["as_of"]),
                )
            )
        plan.errors.extend(RowError(number, name, message) for name, message in errors.items())
        if errors:
            continue
        if cell is None:
            plan.added.append(CellChange(key, None, values, refs=refs))
        elif _values_of(cell) != values:
            plan.changed.append(CellChange(key, _values_of(cell), values, capability=cell))
    plan.removed = [
        CellChange(key, _values_of(cell), None, capability=cell)
        for key, cell in sorted(stored.items())
        if key not in seen
    ]
    return plan
