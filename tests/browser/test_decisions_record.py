"""A selection walked from its goal to an accepted decision record, whose Markdown is kept."""

from pathlib import Path

import pytest

from apps.selections import services
from apps.selections.models import Selection
from apps.selections.tasks import compute_candidates
from tests.benchmarks.factories import result_document
from tests.browser.conftest import accept_as, enter_the_goal, log_in, screenshot
from tests.decisions.factories import make_approver
from tests.evidence.factories import measured_attempt, plan_for
from tests.selections.catalog_fixture import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOAL = {
    "#id_title": "Support bot",
    "#id_isl_tokens": "1024",
    "#id_osl_tokens": "256",
    "#id_rate_rps": "4",
    "#id_ttft_ms": "1000",
    "#id_tpot_ms": "60",
    "#id_max_gpus": "1",
}


def walk_the_wizard(page, sent: list) -> Selection:
    enter_the_goal(page, GOAL)
    page.click("#compute-candidates")
    # No Celery worker here: play the queued computation, as the wizard test does.
    page.wait_for_selector("#computation[data-computation='queued'] progress")
    assert compute_candidates(**sent[0]["kwargs"]) == "done"
    page.wait_for_selector("table.candidates.kept")
    page.click("text=Next: benchmark plan")
    boxes = page.locator("#plan-form input[name=chosen]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector(".messages")
    return Selection.objects.get(title="Support bot")


def test_a_selection_becomes_an_accepted_record_with_its_markdown(
    page, alice, bob, acme, monkeypatch
):
    load_catalog()
    sent: list[dict] = []
    monkeypatch.setattr(services.celery_app, "send_task", lambda name, **kw: sent.append(kw))
    make_approver(bob, acme)
    log_in(page, "alice")
    selection = walk_the_wizard(page, sent)
    first = selection.candidates.filter(chosen=True).order_by("rank").first()
    measured_attempt(
        plan_for(selection, load_points=[{"rate_rps": 4.0}]), first, result_document()["records"]
    )

    page.click("nav.mainnav >> text=Decisions")
    page.select_option("#id_selection", str(selection.pk))
    page.fill("#id_title", "Serve the support bot")
    page.click("#new-record button[type=submit]")
    page.check("#field-chosen input[value='A']")
    page.fill("#id_rationale", "A meets the SLO at 4 req/s on one H100.")
    page.fill("#id_dropped_B", "B needs more memory headroom than we have.")
    page.fill("#id_risks", "A new engine release may change the scheduler defaults.")
    page.click("#save-record")
    page.click("#propose-record")
    assert page.locator("#record-status").inner_text() == "Proposed"
    assert page.locator("#accept-record").count() == 0

    accept_as(page, "bob", selection.decision_records.get().pk)
    assert page.locator("#part-evidence table").count() >= 1
    screenshot(page, "decisions-record")

    with page.expect_download() as download_info:
        page.click("#download-markdown")
    download = download_info.value
    assert download.suggested_filename == "DR-1.md"
    markdown = Path(download.path()).read_text()
    assert 'status: "accepted"' in markdown
    assert 'deciders: ["alice", "bob"]' in markdown
    assert "B needs more memory headroom" in markdown
