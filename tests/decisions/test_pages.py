"""The decisions pages: list with notifications, record with provenance, Markdown, print."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from apps.decisions import services
from apps.decisions.export import estimate_text
from apps.decisions.tasks import sweep
from tests.decisions.factories import accepted, draft, measured_by_runner


def test_the_record_page_shows_the_provenance_a_reviewer_follows(
    alice_client, acme, alice, approver_bob, selection, rows
):
    runner = measured_by_runner(alice, acme, selection)
    record = accepted(alice, approver_bob, acme, selection)
    page = alice_client.get(reverse("decisions:detail", args=[record.pk])).content.decode()

    run = record.evidence[0]
    assert run["runner"]["name"] == runner.name
    assert run["raw_checksums"][0]["sha256"] in page
    assert run["identity_fingerprint"] in page
    assert reverse("catalog:capability", args=[rows["cell"].pk]) in page
    assert reverse("catalog:release", args=[rows["release"].pk]) in page
    assert '<dd id="proposed-by">alice</dd>' in page
    assert '<dd id="approved-by">bob</dd>' in page
    assert "verifies" in page


def test_the_record_page_shows_predicted_against_measured(
    alice_client, acme, alice, approver_bob, selection
):
    measured_by_runner(alice, acme, selection)
    selection.candidates.filter(rank=1).update(
        estimate={"latency": {"ttft_ms": 80.0, "tpot_ms": 20.0, "concurrency": 1}}
    )
    record = accepted(alice, approver_bob, acme, selection)
    rows = record.evidence[0]["predicted_vs_measured"]
    ttft = next(row for row in rows if row["metric"] == "ttft_ms")
    # Every measured request had a TTFT of 0.1 s: 100 ms against the 80 ms estimate.
    assert ttft["measured"] == pytest.approx(100.0)
    assert ttft["ratio"] == pytest.approx(1.25)
    page = alice_client.get(reverse("decisions:detail", args=[record.pk])).content.decode()
    assert "<td>ttft_ms</td><td>80.000</td><td>100.000</td><td>1.25</td>" in page


def test_the_record_page_words_each_prediction_as_the_export_does_zero_included(
    alice_client, acme, alice, approver_bob, selection
):
    band = {"band": {"p10": -0.5, "p90": 1.0}, "rows": 299, "covers_stack": False}
    selection.candidates.filter(rank=1).update(
        estimate={
            "goodput_per_gpu_rps": 0.0,
            "label": "roofline, simulated",
            "latency": {"ttft_ms": 80.0, "tpot_ms": 20.0, "label": "roofline, analytic"},
            "error_band": {"ttft_ms": {**band, "measured_for": None}},
        }
    )
    record = accepted(alice, approver_bob, acme, selection)

    page = alice_client.get(reverse("decisions:detail", args=[record.pk])).content.decode()

    first = next(entry for entry in record.candidates if entry["rank"] == 1)
    assert first["estimate"]["goodput_per_gpu_rps"] == 0.0
    assert html.escape(estimate_text(first["estimate"])) in page
    assert "0 req/s per GPU (roofline, simulated); TTFT 80 ms, TPOT 20 ms (roofline, analytic)" in (
        html.unescape(page)
    )
    assert "so no measured bound for it" in page


def test_a_fired_trigger_shows_as_a_notification_and_a_badge(
    alice_client, acme, alice, approver_bob, selection
):
    record = accepted(alice, approver_bob, acme, selection)
    sweep(now=record.decided_at.replace(year=record.decided_at.year + 1))
    page = alice_client.get(reverse("decisions:list")).content.decode()
    assert 'id="retest-badge"' in page
    assert "Age" in page and "revalidate after 90 days" in page


def test_the_markdown_download_is_an_attachment_named_after_the_record(
    alice_client, acme, alice, selection
):
    record = draft(alice, acme, selection)
    answer = alice_client.get(reverse("decisions:markdown", args=[record.pk]))
    assert answer["Content-Disposition"] == 'attachment; filename="DR-1.md"'
    assert answer.content.decode().startswith('---\nid: "DR-1"')


def test_the_printable_page_has_the_four_parts_and_print_css(alice_client, acme, alice, selection):
    record = draft(alice, acme, selection)
    page = alice_client.get(reverse("decisions:print", args=[record.pk])).content.decode()
    for part in ("part-goal", "part-candidates", "part-evidence", "part-decision"):
        assert f'id="{part}"' in page
    assert "decisions/decisions." in page  # the stylesheet, under its hashed name
    stylesheet = finders.find("decisions/decisions.css")
    assert "@media print" in Path(stylesheet).read_text()


def test_the_author_accepting_in_the_page_gets_an_error_not_an_acceptance(
    alice_client, acme, alice, selection
):
    record = draft(alice, acme, selection)
    alice_client.post(reverse("decisions:propose", args=[record.pk]))
    answer = alice_client.post(reverse("decisions:accept", args=[record.pk]), follow=True)
    assert "cannot approve" in answer.content.decode()
    record.refresh_from_db()
    assert record.status == "proposed"


def _proposed(author, team, selection):
    record = draft(author, team, selection)
    services.record_propose(actor_user=author, team=team, record_id=record.pk)
    return record


def test_the_author_is_not_offered_accept_and_another_approver_is(
    alice_client, bob_client, acme, alice, approver_bob, selection
):
    record = _proposed(alice, acme, selection)
    url = reverse("decisions:detail", args=[record.pk])
    authors_page = alice_client.get(url).content.decode()
    assert 'id="accept-record"' not in authors_page
    assert "another approver of the team accepts it" in authors_page
    assert "Why reject" in authors_page  # an author who approves may still withdraw it
    approvers_page = bob_client.get(url).content.decode()
    assert 'id="accept-record"' in approvers_page and 'id="who-accepts"' not in approvers_page


def test_an_engineer_is_offered_neither_accept_nor_reject(
    alice_client, bob_client, acme, alice, bob, selection
):
    record = _proposed(alice, acme, selection)
    page = bob_client.get(reverse("decisions:detail", args=[record.pk])).content.decode()
    assert 'id="accept-record"' not in page and "Why reject" not in page
    assert "An approver of the team accepts or rejects this record." in page


def test_charlie_gets_404_for_alices_record_pages(charlie_client, acme, alice, selection):
    record = draft(alice, acme, selection)
    for name in ("detail", "print", "markdown", "edit"):
        assert charlie_client.get(reverse(f"decisions:{name}", args=[record.pk])).status_code == 404


def test_editing_a_draft_in_the_page_saves_the_decision(alice_client, acme, alice, selection):
    record = draft(alice, acme, selection, risks="")
    form = {
        "title": "Renamed",
        "chosen": "B",
        "rationale": "B is cheaper.",
        "dropped_A": "A costs more per request.",
        "risks": "Smaller memory.",
        "revalidate_after_days": "30",
        "retest_kinds": ["age", "gpu"],
    }
    alice_client.post(reverse("decisions:edit", args=[record.pk]), form)
    record.refresh_from_db()
    assert (record.title, record.chosen_key, record.dropped) == (
        "Renamed",
        "B",
        {"A": "A costs more per request."},
    )
    assert record.retest_kinds == ["age", "gpu"]


def test_the_record_says_what_the_goals_requests_share_and_its_kv_cache_type_page_and_export(
    alice_client, acme, alice, approver_bob, selection
):
    selection.workload = {
        **selection.workload,
        "prefix_share": 0.9,
        "prefix_tokens": 3000,
        "tool_share": 0.2,
        "kv_dtype": "fp8",
    }
    selection.save(update_fields=["workload"])
    record = accepted(alice, approver_bob, acme, selection)

    page = alice_client.get(reverse("decisions:detail", args=[record.pk])).content.decode()
    export = alice_client.get(reverse("decisions:markdown", args=[record.pk])).content.decode()

    said = (
        "90% of prompts open with a shared 3,000-token prefix; "
        "20% tool-call or structured-output requests"
    )
    assert f'<dd data-field="sharing">{said}</dd>' in page
    assert f"- Sharing: {said}\n" in export
    precision = export.split("- Precision: ", 1)[1].split("\n", 1)[0]
    assert precision.endswith("; KV cache fp8") and not precision.startswith(";")
    assert f'<dd data-field="precision">{precision}</dd>' in page
