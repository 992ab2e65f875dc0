from datetime import date

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.catalog import services
from apps.catalog.models import Capability, EngineRelease, KernelBackend, ReleaseBackend
from tests.catalog.factories import AS_OF, EVIDENCE, make_feature
from tests.conftest import logged_in

pytestmark = pytest.mark.django_db


def _edit_cell(client, cell, **changes):
    data = {
        "backend": "",
        "vendor": cell.vendor,
        "family": cell.family,
        "maturity": cell.maturity,
        "note": cell.note,
        "evidence_url": cell.evidence_url,
        "as_of": cell.as_of.isoformat(),
        "verified_by": cell.verified_by,
        **changes,
    }
    return client.post(reverse("catalog:entry-edit", args=["capabilities", cell.pk]), data)


def test_a_maturity_change_without_new_evidence_is_refused_with_a_form_error(curator, cell):
    response = _edit_cell(logged_in(curator), cell, maturity="stable")
    assert response.status_code == 200
    assert "needs new evidence" in response.context["form"].errors["evidence_url"][0]
    cell.refresh_from_db()
    assert cell.maturity == "beta"
    assert not AuditEvent.objects.exists()


def test_a_maturity_change_with_new_evidence_is_saved_with_before_and_after(curator, cell):
    response = _edit_cell(
        logged_in(curator), cell, maturity="stable", evidence_url="https://example.org/notes-2"
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get()
    assert (event.action, event.actor_name) == ("capability.update", "curator")
    assert (event.before["maturity"], event.after["maturity"]) == ("beta", "stable")
    assert event.after["evidence_url"] == "https://example.org/notes-2"
    assert event.object_id == str(cell.pk)


def test_the_service_refuses_a_maturity_change_without_new_evidence(curator, cell):
    with pytest.raises(ValidationError) as caught:
        services.entry_update(
            actor=Actor.for_user(curator), instance=cell, changes={"maturity": "unsupported"}
        )
    assert "evidence_url" in caught.value.message_dict
    assert Capability.objects.get(pk=cell.pk).maturity == "beta"


def test_an_edit_that_changes_nothing_writes_no_event(curator, cell):
    services.entry_update(actor=Actor.for_user(curator), instance=cell, changes={"note": cell.note})
    assert not AuditEvent.objects.exists()


def test_an_engine_edit_through_the_page_writes_an_event_with_before_and_after(curator, cell):
    engine = cell.release.engine
    data = {"slug": engine.slug, "name": "vLLM", "kind": "engine", "status": "maintenance"}
    response = logged_in(curator).post(
        reverse("catalog:entry-edit", args=["engines", engine.slug]), data
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="engine.update")
    assert event.before["name"] == "VLLM" and event.after["name"] == "vLLM"
    assert (event.before["status"], event.after["status"]) == ("active", "maintenance")


def test_a_cells_history_is_listed_on_its_page(curator, alice_client, cell):
    services.entry_update(
        actor=Actor.for_user(curator), instance=cell, changes={"note": "checked again"}
    )
    response = alice_client.get(reverse("catalog:capability", args=[cell.pk]))
    history = response.context["history"]
    assert [entry.event.action for entry in history] == ["capability.update"]
    assert [change.field for change in history[0].changes] == ["note"]
    assert EVIDENCE in response.content.decode()


def test_a_team_member_who_is_not_staff_cannot_open_an_edit_page(alice_client, cell):
    response = alice_client.get(reverse("catalog:entry-edit", args=["capabilities", cell.pk]))
    assert response.status_code == 403


def test_copying_a_release_forward_copies_backends_and_cells_marked_for_review(curator, cell):
    previous = cell.release
    previous.max_num_seqs = 256
    previous.save()
    backend = KernelBackend.objects.create(slug="flashinfer", name="FlashInfer")
    ReleaseBackend.objects.create(release=previous, backend=backend, vendors=["nvidia"])
    narrowed = cell.__class__.objects.create(
        release=previous,
        feature=make_feature("prec_fp8", "kernel_precision"),
        vendor="nvidia",
        maturity="stable",
        evidence_url=EVIDENCE,
        as_of=AS_OF,
    )
    new = services.release_start_from_previous(
        actor=Actor.for_user(curator),
        previous=previous,
        version="1.1.0",
        release_date=date(2026, 12, 1),
    )
    assert new.needs_review and new.max_num_seqs == 256
    copied = {(c.feature.key, c.vendor, c.maturity, c.needs_review) for c in new.capabilities.all()}
    assert copied == {
        (cell.feature.key, "", "beta", True),
        (narrowed.feature.key, "nvidia", "stable", True),
    }
    assert list(new.backends.values_list("backend__slug", "vendors")) == [
        ("flashinfer", ["nvidia"])
    ]
    assert AuditEvent.objects.filter(action="capability.create").count() == 2
    assert not previous.capabilities.filter(needs_review=True).exists()


def test_copying_forward_to_an_existing_version_is_refused(curator, cell):
    with pytest.raises(ValidationError, match="exists already"):
        services.release_start_from_previous(
            actor=Actor.for_user(curator), previous=cell.release, version=cell.release.version
        )
    assert EngineRelease.objects.count() == 1


def test_a_curator_edits_a_cell_in_the_admin_through_the_audited_service(curator, cell):
    url = reverse("admin:catalog_capability_change", args=[cell.pk])
    data = {
        "release": cell.release_id,
        "feature": cell.feature_id,
        "vendor": "",
        "family": "",
        "maturity": "stable",
        "note": cell.note,
        "evidence_url": cell.evidence_url,
        "as_of": cell.as_of.isoformat(),
        "verified_by": "",
    }
    refused = logged_in(curator).post(url, data)
    assert refused.status_code == 200 and "needs new evidence" in refused.content.decode()
    accepted = logged_in(curator).post(url, {**data, "as_of": "2026-11-20"})
    assert accepted.status_code == 302
    event = AuditEvent.objects.get(action="capability.update")
    assert (event.before["maturity"], event.after["maturity"]) == ("beta", "stable")
