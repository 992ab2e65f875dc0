"""A record says what its evidence is, and simulated-only evidence is never accepted unmarked."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.decisions import services
from apps.decisions.evidence_kind import evidence_kind
from apps.decisions.export import record_markdown
from apps.decisions.models import DecisionRecord
from tests.benchmarks.factories import result_document
from tests.decisions.factories import draft, measured_by_runner
from tests.evidence.factories import measured_attempt, plan_for
from tests.evidence.samples import failed, streamed

pytestmark = pytest.mark.django_db


def _dry_run(selection) -> None:
    """Candidate A run once on the simulated engine."""
    plan = plan_for(selection, load_points=[{"rate_rps": 1.0}], run_mode="simulated")
    candidate = selection.candidates.order_by("rank").first()
    measured_attempt(plan, candidate, result_document()["records"])


@pytest.fixture
def simulated_record(acme, alice, selection):
    _dry_run(selection)
    return draft(alice, acme, selection)


def test_a_record_on_a_dry_run_says_simulated_on_the_page_the_api_and_the_markdown(
    simulated_record, alice_client
):
    record = simulated_record
    assert [entry["mode"] for entry in record.evidence] == ["simulated"]
    page = alice_client.get(f"/decisions/{record.pk}/").content.decode()
    assert 'id="evidence-banner"' in page and "No real engine ran." in page
    assert '<span id="evidence-kind"><span class="badge mode-badge mode-simulated"' in page
    assert 'id="simulation-only"' in page
    body = alice_client.get(f"/api/v1/decisions/{record.pk}/").json()
    assert (body["evidence_kind"], body["simulation_only"]) == ("simulated", False)
    assert body["evidence"][0]["mode"] == "simulated"
    markdown = alice_client.get(f"/decisions/{record.pk}/markdown/").content.decode()
    assert 'evidence: "simulated"' in markdown.split("---")[1]


def test_accepting_simulated_only_evidence_unmarked_is_refused_with_a_clear_message(
    simulated_record, acme, alice, approver_bob, client
):
    record = simulated_record
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    with pytest.raises(ValidationError, match="rests on simulated evidence only"):
        services.record_accept(actor_user=approver_bob, team=acme, record_id=record.pk)
    client.force_login(approver_bob)
    response = client.post(f"/api/v1/decisions/{record.pk}/accept/")
    assert response.status_code == 400
    assert "no real engine ran" in response.json()["simulation_only"][0]
    page = client.post(f"/decisions/{record.pk}/accept/", follow=True).content.decode()
    assert "rests on simulated evidence only" in page
    record.refresh_from_db()
    assert record.status == "proposed" and record.decided_by is None


def test_a_record_proposed_as_simulation_only_is_accepted_and_its_title_says_so(
    simulated_record, acme, alice, approver_bob, alice_client
):
    record = simulated_record
    response = alice_client.post(f"/decisions/{record.pk}/propose/", {"simulation_only": "on"})
    assert response.status_code == 302
    services.record_accept(actor_user=approver_bob, team=acme, record_id=record.pk)
    record = DecisionRecord.objects.get(pk=record.pk)
    assert (record.status, record.simulation_only) == ("accepted", True)
    markdown = record_markdown(record)
    assert markdown.split("\n")[2] == f'title: "{record.title} (simulation only)"'
    assert f"# {record.reference}: {record.title} (simulation only)" in markdown
    page = alice_client.get(f"/decisions/{record.pk}/").content.decode()
    assert "proposed as simulation only" in page


def test_the_api_proposes_as_simulation_only(simulated_record, alice_client):
    response = alice_client.post(
        f"/api/v1/decisions/{simulated_record.pk}/propose/",
        {"simulation_only": True},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["simulation_only"]) == ("proposed", True)


def test_measured_evidence_cannot_be_marked_simulation_only(acme, alice, selection, alice_client):
    measured_by_runner(alice, acme, selection)
    record = draft(alice, acme, selection)
    assert record.evidence_kind == "measured"
    response = alice_client.post(
        f"/api/v1/decisions/{record.pk}/propose/",
        {"simulation_only": True},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "there is no simulation to mark" in response.json()["simulation_only"][0]
    record.refresh_from_db()
    assert record.status == "draft"
    page = alice_client.get(f"/decisions/{record.pk}/").content.decode()
    assert 'id="evidence-banner"' not in page and 'id="simulation-only"' not in page
    assert 'evidence: "measured"' in record_markdown(record)


def test_a_record_on_measured_evidence_is_accepted_as_before(acme, alice, approver_bob, selection):
    measured_by_runner(alice, acme, selection)
    record = draft(alice, acme, selection)
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    record = services.record_accept(actor_user=approver_bob, team=acme, record_id=record.pk)
    assert record.status == "accepted" and record.display_title == record.title


@pytest.mark.parametrize(
    ("entries", "kind"),
    [
        ([], "none"),
        ([{"source": "runner", "mode": "measured"}], "measured"),
        ([{"source": "runner", "mode": "simulated"}] * 2, "simulated"),
        ([{"source": "runner", "mode": "simulated"}, {"source": "import"}], "mixed"),
        ([{"source": "import", "mode": "measured"}], "imported"),
        ([{"source": "import", "mode": "measured"}, {"source": "runner"}], "measured"),
    ],
)
def test_the_evidence_kind_sums_up_the_runs(entries, kind):
    assert evidence_kind(entries) == kind


def test_a_record_counts_each_load_points_failed_requests_on_its_page_and_export(
    acme, alice, selection, alice_client
):
    plan = plan_for(selection, load_points=[{"rate_rps": 1.0}])
    records = [streamed(i, ttft_s=0.1, gaps=[0.02]) for i in range(3)] + [failed(3)]
    measured_attempt(plan, selection.candidates.order_by("rank").first(), records)

    record = draft(alice, acme, selection)

    (point,) = record.evidence[0]["load_points"]
    assert (point["errors"], point["requests"]) == (1, 4)
    page = alice_client.get(f"/decisions/{record.pk}/").content.decode()
    assert "<td>1 of 4</td>" in page
    assert "| 1 req/s | 1 of 4 |" in record_markdown(record)
