import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.catalog.loading import FIXTURE_DIR
from apps.catalog.models import Capability, Engine, EngineRelease, ModelSpec

pytestmark = pytest.mark.django_db


def _fixture_count(name: str) -> int:
    return len(json.loads((FIXTURE_DIR / f"{name}.json").read_text()))


def test_the_first_load_creates_every_curated_row_with_one_system_event_each(catalog):
    assert Capability.objects.count() == _fixture_count("capabilities")
    assert ModelSpec.objects.filter(slug="llama-3.1-8b").exists()
    creates = AuditEvent.objects.filter(action__endswith=".create")
    assert creates.filter(action="capability.create").count() == _fixture_count("capabilities")
    assert set(creates.values_list("actor_name", flat=True)) == {"catalog_load"}
    assert set(creates.values_list("actor_type", flat=True)) == {"system"}


def test_loading_twice_changes_nothing_and_records_no_second_event(catalog):
    events_after_first = AuditEvent.objects.count()
    cells_before = list(Capability.objects.order_by("pk").values())
    call_command("catalog_load", verbosity=0)
    assert AuditEvent.objects.count() == events_after_first
    assert list(Capability.objects.order_by("pk").values()) == cells_before


def _edited_fixtures(tmp_path: Path, name: str, edit: Callable[[list], None]) -> Path:
    """A copy of the curated fixtures with `edit` applied to one file's entries."""
    fixtures = tmp_path / "catalog"
    shutil.copytree(FIXTURE_DIR, fixtures)
    entries = json.loads((fixtures / f"{name}.json").read_text())
    edit(entries)
    (fixtures / f"{name}.json").write_text(json.dumps(entries))
    return fixtures


def test_a_fixture_edit_updates_the_row_with_before_and_after(catalog, tmp_path):
    engines = json.loads((FIXTURE_DIR / "engines.json").read_text())
    fixtures = _edited_fixtures(tmp_path, "engines", lambda rows: rows[0].update(licence="MIT"))
    call_command("catalog_load", fixture_dir=str(fixtures), verbosity=0)
    event = AuditEvent.objects.get(action="engine.update")
    assert event.object_id == str(Engine.objects.get(slug=engines[0]["slug"]).pk)
    assert event.before["licence"] == "Apache-2.0"
    assert event.after["licence"] == "MIT"


def test_a_cell_pointing_at_an_unknown_feature_stops_the_load_and_writes_nothing(db, tmp_path):
    fixtures = _edited_fixtures(
        tmp_path, "capabilities", lambda rows: rows[5].update(feature="no_such_feature")
    )
    with pytest.raises(CommandError, match=r"capabilities\.json entry 5"):
        call_command("catalog_load", fixture_dir=str(fixtures), verbosity=0)
    assert not EngineRelease.objects.exists()
    assert not AuditEvent.objects.exists()
