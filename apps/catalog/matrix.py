"""The capability matrix (releases by features) built from one query of cells.

A (release, feature) pair may hold several cells, each narrowed to a backend, vendor or family.
The matrix shows one colour per pair: the unscoped cell when there is one (it is the general
claim), else the most mature narrowed cell; the hover text and the cell page list them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet

from apps.catalog.choices import MATURITY_RANK, Contract, EngineKind, Maturity
from apps.catalog.models import Capability, EngineRelease, Feature

_CONTRACT_ORDER = {value: index for index, value in enumerate(Contract.values)}
_KIND_ORDER = {value: index for index, value in enumerate(EngineKind.values)}
# One character per maturity, so the matrix reads without colour too.
MATURITY_SYMBOLS: dict[str, str] = {
    Maturity.STABLE: "S",
    Maturity.BETA: "B",
    Maturity.EXPERIMENTAL: "E",
    Maturity.DEPRECATED: "D",
    Maturity.UNSUPPORTED: "✗",
    Maturity.UNKNOWN: "?",
}
MATURITY_LEGEND = [(value, label, MATURITY_SYMBOLS[value]) for value, label in Maturity.choices]


def scope_label(cell: Capability) -> str:
    """What a cell is narrowed to, e.g. "flashinfer, nvidia"; empty for a general cell."""
    parts = [cell.backend.slug if cell.backend_id else "", cell.vendor, cell.family]
    return ", ".join(part for part in parts if part)


def _cell_order(cell: Capability) -> tuple[bool, int]:
    return (bool(scope_label(cell)), -MATURITY_RANK[cell.maturity])


@dataclass
class MatrixCell:
    """All cells of one (release, feature) pair, the one that colours the pair first."""

    variants: list[Capability]

    @property
    def primary(self) -> Capability:
        return self.variants[0]

    @property
    def symbol(self) -> str:
        return MATURITY_SYMBOLS[self.primary.maturity]

    @property
    def narrowed_count(self) -> int:
        return len(self.variants) - 1

    @property
    def needs_review(self) -> bool:
        return any(cell.needs_review for cell in self.variants)

    @property
    def title(self) -> str:
        """The hover text: every variant with its maturity, note and evidence."""
        lines = []
        for cell in self.variants:
            scope = scope_label(cell)
            head = f"{cell.maturity}{f' [{scope}]' if scope else ''}"
            review = " (needs review)" if cell.needs_review else ""
            lines.append(
                f"{head}{review}: {cell.note or 'no note'}\n"
                f"evidence: {cell.evidence_url} (as of {cell.as_of.isoformat()})"
            )
        return "\n".join(lines)


@dataclass
class MatrixRow:
    release: EngineRelease
    cells: list[MatrixCell | None]


@dataclass
class Matrix:
    features: list[Feature]
    rows: list[MatrixRow] = field(default_factory=list)

    @property
    def contract_groups(self) -> list[tuple[str, int]]:
        """(contract label, number of feature columns) in column order, for the header row."""
        groups: list[tuple[str, int]] = []
        for feature in self.features:
            label = feature.get_contract_display()
            if groups and groups[-1][0] == label:
                groups[-1] = (label, groups[-1][1] + 1)
            else:
                groups.append((label, 1))
        return groups

    def by_feature(self) -> list[tuple[Feature, list[MatrixCell | None]]]:
        """The matrix turned on its side: one row per feature, one column per release."""
        return [
            (feature, [row.cells[index] for row in self.rows])
            for index, feature in enumerate(self.features)
        ]


def matrix_cells(cells: QuerySet[Capability]) -> list[Capability]:
    return list(cells.select_related("release__engine", "feature", "backend"))


def build_matrix(
    cells: Iterable[Capability], *, releases: Iterable[EngineRelease] | None = None
) -> Matrix:
    """Lay out cells; rows are the releases that have cells, or `releases` when given."""
    grouped: dict[tuple[int, int], list[Capability]] = defaultdict(list)
    features: dict[int, Feature] = {}
    row_releases: dict[int, EngineRelease] = {}
    for cell in cells:
        grouped[(cell.release_id, cell.feature_id)].append(cell)
        features[cell.feature_id] = cell.feature
        row_releases[cell.release_id] = cell.release
    if releases is not None:
        row_releases = {release.pk: release for release in releases}
    columns = sorted(features.values(), key=lambda f: (_CONTRACT_ORDER[f.contract], f.name))
    ordered_releases = sorted(
        row_releases.values(),
        key=lambda r: (_KIND_ORDER[r.engine.kind], r.engine.name.lower(), -r.pk),
    )
    matrix = Matrix(features=columns)
    for release in ordered_releases:
        row_cells: list[MatrixCell | None] = []
        for feature in columns:
            variants = grouped.get((release.pk, feature.pk))
            row_cells.append(MatrixCell(sorted(variants, key=_cell_order)) if variants else None)
        matrix.rows.append(MatrixRow(release=release, cells=row_cells))
    return matrix
