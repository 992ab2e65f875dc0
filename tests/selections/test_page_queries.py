"""The selection pages over a whole-catalog selection read a bounded number of queries."""

from __future__ import annotations

from apps.audit.services import Actor
from apps.catalog.services import published_import
from apps.selections import services
from apps.selections.models import Candidate
from tests.catalog.published_rows import sample_row
from tests.query_budget import page_queries
from tests.selections.helpers import create_selection

# Measured when these guards were written, plus a little headroom. The list and the detail
# page also ask for each selection's stage (plans, evidence and decisions counted for all the
# listed selections at once: a fixed handful of queries, whatever the number of selections).
# The candidate page reads the nearest published rows of all its stacks in one more query, and
# the page's candidates with their selection (no query per row to find it).
BUDGETS = {"list": 14, "detail": 14, "candidates": 15, "plan": 14}


def test_the_selection_pages_of_a_computed_selection_stay_within_their_query_budgets(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(max_gpus=8)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    assert selection.candidates.count() > 100  # more than one page of rows
    # published rows beside every kept stack: read for the whole page at once
    rows = [sample_row(id=f"c{n}", batch_size=str(n), silicon_data_source="x") for n in (1, 8, 64)]
    published_import(actor=Actor.system("test"), rows=rows)

    assert page_queries(alice_client, "selections:list") <= BUDGETS["list"]
    for name in ("detail", "candidates", "plan"):
        assert page_queries(alice_client, f"selections:{name}", selection.pk) <= BUDGETS[name]


def test_comparing_four_chosen_candidates_reads_as_many_queries_as_comparing_two(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    picks = list(selection.candidates.filter(outcome="kept").order_by("rank")[:4])
    Candidate.objects.filter(pk__in=[pick.pk for pick in picks]).update(chosen=True)

    def compared(count: int) -> int:
        ids = [str(pick.pk) for pick in picks[:count]]
        return page_queries(alice_client, "selections:compare", selection.pk, query={"ids": ids})

    assert compared(2) == compared(4) <= BUDGETS["plan"]
