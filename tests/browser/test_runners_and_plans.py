"""The runner and plan pages in a real browser: enrolling, live progress, cancel confirmation."""

import pytest
from django.db import transaction

from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import (
    RunnerClient,
    catalog,
    enrolled_runner,
    selection_with_candidates,
)
from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_creates_an_enrollment_token_and_sees_the_enroll_command(page, alice):
    log_in(page, "alice")
    page.click("nav.mainnav >> text=Runners")
    assert "No runners yet" in page.content()
    page.click("text=Enroll a runner")
    page.click("#create-token")
    command = page.locator("#enroll-command").inner_text()
    assert command.startswith("stackselect-runner enroll --url http://")
    assert " --token sse_" in command
    screenshot(page, "runner-enroll-token")


def test_the_plan_page_shows_progress_live_and_cancel_asks_first(page, alice, acme):
    rows = catalog()
    selection = selection_with_candidates(acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")])
    _, credential = enrolled_runner(alice, acme)
    with transaction.atomic():
        plan = plan_create(
            actor_user=alice,
            team=acme,
            selection_id=selection.pk,
            options=PlanOptions(
                run_mode="simulated", request_count=10, load_points=({"rate_rps": 1.0},)
            ),
        )
    attempt = plan.jobs.get().attempts.get()
    api = RunnerClient(credential)

    log_in(page, "alice")
    page.goto(f"/benchmarks/{plan.pk}/")
    state = page.locator("tr[data-job] [data-field=state]")
    assert state.inner_text() == "Queued"
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    api.post(
        f"attempts/{attempt.pk}/progress",
        {"load_point": 0, "done": 5, "total": 10, "message": "rate 1 req/s: 5 of 10"},
    )
    page.wait_for_function(
        "() => document.querySelector('tr[data-job] [data-field=progress]').value > 0.49"
    )
    assert state.inner_text() == "Running"
    assert "5 of 10" in page.locator("tr[data-job] [data-field=message]").inner_text()
    screenshot(page, "plan-progress")

    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.click("tr[data-job] button.danger")
    assert dialogs and "Cancel this job?" in dialogs[0]
    assert api.post("heartbeat", {"attempt_id": attempt.pk}).json()["cancel"] is False
