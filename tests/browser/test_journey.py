"""The whole journey in Chromium on real parts: a goal, its candidates, three of them measured by
two runner agents, the evidence, and a decision record proposed by alice and accepted by bob.

Candidates are computed by a real Celery worker (the web app's task, on a queue of this test's
own so other test runs on the same Redis neither take nor feed it); the benchmark jobs run on
real runner processes with the simulated engine. Each step leaves a screenshot in
test-artifacts/journey-NN-<step>.png.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from apps.benchmarks.models import BenchmarkPlan
from apps.selections.models import Selection
from config.celery import app as celery_app
from tests.browser.conftest import accept_as, enter_the_goal, fill_in, log_in, screenshot
from tests.decisions.factories import make_approver
from tests.fleet.conftest import fast_fleet, runners  # noqa: F401  (fixtures)
from tests.fleet.processes import ROOT
from tests.selections.catalog_fixture import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GOAL = {
    "#id_title": "Support bot",
    "#id_isl_tokens": "1024",
    "#id_osl_tokens": "128",
    "#id_rate_rps": "2",
    "#id_ttft_ms": "1000",
    "#id_tpot_ms": "60",
    "#id_max_gpus": "1",
}
PLAN = {"#id_load_levels": "1, 3", "#id_request_count": "8", "#id_warmup_requests": "1"}
PLAN_TIMEOUT_MS = 240_000


class Journey:
    """Numbers the screenshots in the order the steps happen. A shot is taken once a step's
    page has loaded: in Chromium a click right after a full-page screenshot may not land."""

    def __init__(self, page) -> None:
        self.page = page
        self.step = 0

    def shot(self, name: str) -> Path:
        self.step += 1
        return screenshot(self.page, f"journey-{self.step:02d}-{name}")


def _test_database_url() -> str:
    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def web_worker(live_server, monkeypatch, tmp_path):
    """A real Celery worker for the web app's tasks, reading and writing the test database.

    Tasks the web app sends without a queue (the candidate computation) go to this test's own
    queue; tasks sent to a named queue (runner jobs) keep theirs."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker process needs the PostgreSQL test database")
    queue = f"journey-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(celery_app, "send_task", partial(celery_app.send_task, queue=queue))
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO")}
    env.update(DATABASE_URL=_test_database_url(), CELERY_BROKER_URL=settings.CELERY_BROKER_URL)
    log = tmp_path / "web-worker.log"
    with log.open("ab") as output:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
             "--queues", queue, "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    yield  # its log stays in the test's tmp_path
    worker.terminate()
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait(timeout=10)


def walk_the_wizard(page, journey: Journey) -> Selection:
    enter_the_goal(page, GOAL)
    journey.shot("goal")
    page.click("#compute-candidates")
    page.wait_for_selector("#computation progress")
    journey.shot("computing")
    page.wait_for_selector("table.candidates.kept", timeout=120_000)  # the poller reloads
    page.wait_for_selector("#chart-goodput .main-svg")
    journey.shot("candidates")
    return Selection.objects.get(title="Support bot")


def choose_three_engines(page, journey: Journey) -> list[str]:
    """Tick the best-ranked candidate of each of the first three engines on the plan step."""
    page.click("text=Next: benchmark plan")
    rows = page.locator("#plan-form tbody tr")
    engines: list[str] = []
    for index in range(rows.count()):
        row = rows.nth(index)
        engine = row.get_attribute("data-engine")
        if engine not in engines:
            engines.append(engine)
            row.locator("input[name=chosen]").check()
        if len(engines) == 3:
            break
    page.click("#plan-form button[type=submit]")
    assert "3 candidates chosen" in page.locator(".messages").inner_text()
    journey.shot("chosen")
    return engines


def run_the_plan(page, journey: Journey) -> BenchmarkPlan:
    page.click("#create-plan")
    fill_in(page, PLAN)
    page.check("input[name=run_mode][value=simulated]")  # the runners here are simulated
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector("tr[data-job] [data-field=state]")
    journey.shot("plan-running")
    page.wait_for_function(
        "() => [...document.querySelectorAll('tr[data-job] [data-field=state]')]"
        ".every(cell => cell.innerText === 'Succeeded')",
        timeout=PLAN_TIMEOUT_MS,
    )
    page.reload()  # the plan's own state is drawn by the server
    assert page.locator("#plan-state").inner_text() == "Succeeded"
    journey.shot("plan-finished")
    return BenchmarkPlan.objects.get()


def open_the_evidence(page, journey: Journey, selection: Selection) -> None:
    page.click("nav.mainnav >> text=Selections")
    page.click(f"text={selection.title}")
    page.click("text=4. Evidence")
    page.wait_for_selector("#chart-ttft .main-svg")
    # three candidates at two load points each
    assert page.locator("table.evidence.metrics > tbody > tr").count() == 6
    journey.shot("evidence")


def write_and_propose(page, journey: Journey, selection: Selection, engines: list[str]) -> int:
    page.click("nav.mainnav >> text=Decisions")
    page.select_option("#id_selection", str(selection.pk))
    page.fill("#id_title", "Serve the support bot")
    page.click("#new-record button[type=submit]")
    page.check("#field-chosen input[value='A']")
    page.fill("#id_rationale", f"A ({engines[0]}) meets the SLO at both rates on one H100.")
    page.fill("#id_dropped_B", f"B ({engines[1]}) brings no gain and is less familiar to us.")
    page.fill("#id_dropped_C", f"C ({engines[2]}) brings no gain and is less familiar to us.")
    page.fill("#id_risks", "Measured on simulated runners; repeat on the real H100s first.")
    page.click("#save-record")
    page.wait_for_selector("#propose-record")
    journey.shot("decision-draft")
    assert "simulated" in page.locator("#evidence-banner").inner_text()
    page.check("#simulation-only")
    page.click("#propose-record")
    assert page.locator("#record-status").inner_text() == "Proposed"
    journey.shot("decision-proposed")
    return selection.decision_records.get().pk


def test_a_goal_becomes_an_accepted_decision_through_runners_and_evidence(
    page,
    alice,
    bob,
    acme,
    runners,  # noqa: F811
    web_worker,
):
    load_catalog()
    make_approver(bob, acme)
    fleet = [runners("sim-h100-a"), runners("sim-h100-b")]
    journey = Journey(page)

    log_in(page, "alice")
    selection = walk_the_wizard(page, journey)
    assert selection.candidates.filter(outcome="kept").count() > 3
    engines = choose_three_engines(page, journey)
    assert len(set(engines)) == 3

    plan = run_the_plan(page, journey)
    jobs = list(plan.jobs.order_by("pk"))
    assert {job.stack["engine"] for job in jobs} == set(engines)
    runner_names = {a.runner.name for job in jobs for a in job.attempts.select_related("runner")}
    assert runner_names == {runner.name for runner in fleet}, "both runners took jobs"

    open_the_evidence(page, journey, selection)
    record_id = write_and_propose(page, journey, selection, engines)

    accept_as(page, "bob", record_id)
    journey.shot("decision-accepted")

    with page.expect_download() as download_info:
        page.click("#download-markdown")
    markdown = Path(download_info.value.path()).read_text()
    assert 'status: "accepted"' in markdown
    assert 'deciders: ["alice", "bob"]' in markdown
    assert f"B ({engines[1]}) brings no gain" in markdown
