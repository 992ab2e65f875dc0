import io
import json

import pandas as pd
import pytest
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.catalog import services
from apps.catalog.interchange import export_matrix
from apps.catalog.models import Capability
from tests.conftest import logged_in

pytestmark = pytest.mark.django_db


def _frame() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(export_matrix("csv")), dtype=str, keep_default_na=False)


def _import(curator, frame: pd.DataFrame, *, apply: bool):
    content = frame.to_csv(index=False).encode()
    return services.matrix_import(
        actor=Actor.for_user(curator), content=content, file_format="csv", apply=apply
    )


def _row_of(frame: pd.DataFrame, engine: str, feature: str) -> int:
    match = frame[(frame.engine == engine) & (frame.feature == feature) & (frame.backend == "")]
    return int(match.index[0])


def test_importing_the_export_unchanged_finds_nothing_to_do(catalog, curator):
    plan = _import(curator, _frame(), apply=False)
    assert plan.rows == Capability.objects.count()
    assert (plan.errors, plan.added, plan.changed, plan.removed) == ([], [], [], [])


def test_a_dry_run_shows_added_changed_and_removed_cells_and_writes_nothing(catalog, curator):
    frame = _frame()
    changed = _row_of(frame, "vllm", "prefix_caching")
    frame.loc[changed, "note"] = "re-read the docs"
    removed = frame.loc[_row_of(frame, "sglang", "openai_api")].copy()
    frame = frame.drop(index=_row_of(frame, "sglang", "openai_api"))
    added = frame.loc[changed].copy()
    added["vendor"] = "amd"
    frame = pd.concat([frame, added.to_frame().T], ignore_index=True)
    events_before = AuditEvent.objects.count()

    plan = _import(curator, frame, apply=False)

    assert plan.errors == [] and not plan.applied
    assert [c.key.label for c in plan.added] == ["vllm 0.33.0 · prefix_caching [amd]"]
    assert [c.changed_fields for c in plan.changed] == [["note"]]
    assert [c.key.feature for c in plan.removed] == ["openai_api"]
    assert plan.removed[0].key.engine == removed["engine"]
    assert AuditEvent.objects.count() == events_before
    assert Capability.objects.filter(vendor="amd").count() == 0


def test_applying_an_import_writes_one_event_per_change(catalog, curator):
    frame = _frame()
    row = _row_of(frame, "tgi", "openai_api")
    frame.loc[row, "maturity"] = "deprecated"
    frame.loc[row, "evidence_url"] = "https://example.org/tgi-openai-api-deprecated"
    frame = frame.drop(index=_row_of(frame, "ollama", "openai_api"))
    events_before = AuditEvent.objects.count()

    plan = _import(curator, frame, apply=True)

    assert plan.applied
    new_events = AuditEvent.objects.order_by("-id")[:2]
    assert {e.action for e in new_events} == {"capability.update", "capability.delete"}
    assert AuditEvent.objects.count() == events_before + 2
    tgi = Capability.objects.get(release__engine__slug="tgi", feature__key="openai_api")
    assert tgi.maturity == "deprecated"
    assert not Capability.objects.filter(
        release__engine__slug="ollama", feature__key="openai_api"
    ).exists()


def test_a_bad_csv_is_rejected_with_row_numbers_and_nothing_is_written(catalog, curator):
    frame = _frame()
    frame.loc[2, "maturity"] = "rock-solid"
    frame.loc[4, "as_of"] = "29/11/2026"
    frame.loc[6, "feature"] = "teleportation"
    frame.loc[8, "note"] = "this valid change must not be applied either"
    cells_before = list(Capability.objects.order_by("pk").values())
    events_before = AuditEvent.objects.count()

    plan = _import(curator, frame, apply=True)

    assert not plan.applied
    # Row numbers count from 1 at the first row after the header: frame index + 1.
    assert [(e.row, e.field) for e in plan.errors] == [
        (3, "maturity"),
        (5, "as_of"),
        (7, "feature"),
    ]
    assert list(Capability.objects.order_by("pk").values()) == cells_before
    assert AuditEvent.objects.count() == events_before


@pytest.mark.parametrize("column", ["note", "verified_by", "engine", "feature"])
def test_a_nul_in_an_imported_cell_is_a_row_error_naming_its_column_and_nothing_is_written(
    catalog, curator, column
):
    frame = _frame()
    frame.loc[3, column] += "\x00"
    upload = io.BytesIO(frame.to_csv(index=False).encode())
    upload.name = "matrix.csv"
    cells_before = list(Capability.objects.order_by("pk").values())
    events_before = AuditEvent.objects.count()

    response = logged_in(curator).post(
        reverse("catalog-matrix-import"), {"file": upload, "file_format": "csv", "apply": "true"}
    )

    assert response.status_code == 400
    body = response.json()
    assert body["applied"] is False
    errors = {(e["row"], e["field"]): e["message"] for e in body["errors"]}
    assert errors[(4, column)] == "NUL characters are not accepted"
    assert {row for row, _ in errors} == {4}
    assert list(Capability.objects.order_by("pk").values()) == cells_before
    assert AuditEvent.objects.count() == events_before


def test_an_import_refuses_a_maturity_change_without_new_evidence(catalog, curator):
    frame = _frame()
    row = _row_of(frame, "vllm", "openai_api")
    frame.loc[row, "maturity"] = "deprecated"
    plan = _import(curator, frame, apply=True)
    assert [(e.row, e.field) for e in plan.errors] == [(row + 1, "evidence_url")]
    assert not plan.applied


def test_the_json_export_reads_back_as_the_same_matrix(catalog, curator):
    data = json.loads(export_matrix("json"))
    assert len(data) == Capability.objects.count()
    plan = services.matrix_import(
        actor=Actor.for_user(curator),
        content=json.dumps(data).encode(),
        file_format="json",
        apply=False,
    )
    assert not plan.has_changes and plan.errors == []


def test_a_file_missing_a_required_column_is_refused_by_name(catalog, curator):
    frame = _frame().drop(columns=["evidence_url"])
    with pytest.raises(ValueError, match=r"missing column.*evidence_url"):
        _import(curator, frame, apply=False)


def test_the_import_page_previews_then_applies_the_same_file(catalog, curator):
    client = logged_in(curator)
    frame = _frame()
    frame.loc[_row_of(frame, "vllm", "openai_api"), "note"] = "openai_api re-checked"
    upload = io.BytesIO(frame.to_csv(index=False).encode())
    upload.name = "matrix.csv"

    preview = client.post(reverse("catalog:import"), {"file": upload, "action": "preview"})
    assert [c.changed_fields for c in preview.context["plan"].changed] == [["note"]]
    assert not AuditEvent.objects.filter(action="capability.update").exists()

    applied = client.post(
        reverse("catalog:import"), {"action": "apply", "digest": preview.context["digest"]}
    )
    assert applied.status_code == 302
    assert AuditEvent.objects.filter(action="capability.update").count() == 1


def test_anyone_signed_in_can_download_the_matrix_as_csv(catalog, alice_client):
    response = alice_client.get(reverse("catalog:export", args=["csv"]))
    assert response["Content-Type"].startswith("text/csv")
    rows = pd.read_csv(io.StringIO(response.content.decode()), dtype=str)
    assert len(rows) == Capability.objects.count()
