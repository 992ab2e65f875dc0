"""The home page shows where each selection stands, due retests, the fleet and recent changes,
only of the acting team, in a fixed number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.dashboard.stages import (
    ACCEPTED,
    CANDIDATES,
    EVIDENCE,
    GOAL,
    PLAN_RUNNING,
    PROPOSED,
    RETEST_DUE,
    SelectionFacts,
    stage_of,
)
from apps.decisions.models import RetestTrigger
from apps.decisions.services import record_propose
from tests.conftest import logged_in
from tests.decisions.factories import (
    accepted,
    decision_catalog,
    draft,
    make_approver,
    two_candidate_selection,
)

NOTHING = SelectionFacts(False, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("changes", "stage"),
    [
        ({}, GOAL),
        ({"has_candidates": True}, CANDIDATES),
        ({"has_candidates": True, "running_plans": 1}, PLAN_RUNNING),
        ({"has_candidates": True, "finished_plans": 1, "evidence_runs": 2}, EVIDENCE),
        ({"evidence_runs": 2, "proposed_records": 1}, PROPOSED),
        ({"proposed_records": 1, "accepted_records": 1}, ACCEPTED),
        ({"accepted_records": 1, "due_triggers": 1}, RETEST_DUE),
    ],
)
def test_a_selection_stands_at_its_most_advanced_fact(changes: dict, stage: str) -> None:
    facts = SelectionFacts(**{**NOTHING.__dict__, **changes})
    assert stage_of(facts) == stage


def test_an_empty_team_sees_what_to_do_first(alice):
    page = logged_in(alice).get("/").content.decode()
    assert "No selections yet" in page
    assert "No runner enrolled" in page


def test_the_home_page_follows_the_decision_and_its_retest(alice, bob, acme):
    rows = decision_catalog()
    proposed_one = two_candidate_selection(acme, alice, rows)
    record_propose(actor_user=alice, team=acme, record_id=draft(alice, acme, proposed_one).pk)
    decided = two_candidate_selection(acme, alice, rows)
    record = accepted(alice, make_approver(bob, acme), acme, decided)
    RetestTrigger.objects.create(record=record, kind="engine_major", key="k", reason="vLLM 2")

    page = logged_in(alice).get("/").content.decode()

    assert f'data-stage="{PROPOSED}"' in page
    assert f'data-stage="{RETEST_DUE}"' in page
    assert "vLLM 2" in page
    assert "decision.accept" in page  # the recent changes


def test_the_home_page_shows_nothing_of_another_team(alice, charlie, acme):
    two_candidate_selection(acme, alice, decision_catalog())
    page = logged_in(charlie).get("/").content.decode()
    assert "No selections yet" in page
    assert "Nothing has changed yet" in page


def test_the_home_page_costs_the_same_queries_for_one_or_many_selections(alice, acme):
    rows = decision_catalog()
    two_candidate_selection(acme, alice, rows)
    client = logged_in(alice)
    with CaptureQueriesContext(connection) as one:
        client.get("/")
    for _ in range(3):
        two_candidate_selection(acme, alice, rows)
    with CaptureQueriesContext(connection) as four:
        client.get("/")
    assert len(four) == len(one)


def test_the_selection_page_and_list_follow_the_decision_too(alice, bob, acme):
    rows = decision_catalog()
    decided = two_candidate_selection(acme, alice, rows)
    accepted(alice, make_approver(bob, acme), acme, decided)
    client = logged_in(alice)

    detail = client.get(f"/selections/{decided.pk}/").content.decode()
    listing = client.get("/selections/").content.decode()

    assert '<span class="badge" id="selection-stage">Decision accepted</span>' in detail
    assert '<td class="selection-stage">Decision accepted</td>' in listing
    assert "Benchmark planned" not in detail + listing
