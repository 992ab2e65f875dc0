"""A record's predictions say how far the analytic figures it keeps sit from the simulated ones."""

from __future__ import annotations

import copy
from dataclasses import asdict

import pytest

from apps.decisions import services as decisions
from apps.decisions.export import record_markdown
from apps.decisions.services import DecisionText
from apps.selections import selectors, services
from apps.selections.templatetags.bands import simulated_share_words
from tests.selections.catalog_fixture import load_catalog
from tests.selections.conftest import GOAL
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


def test_an_analytic_candidate_says_how_this_goals_simulated_replicas_read_as_the_candidates_do(
    acme, alice, alice_client
):
    load_catalog()
    payload = copy.deepcopy(GOAL)
    payload["constraints"].update(accelerators=["h100-sxm", "l40s"], max_gpus=2)
    selection = create_selection(user=alice, team=acme, payload=payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    kept = selection.candidates.filter(outcome="kept").order_by("rank")
    simulated = kept.filter(estimate__comparison="simulated").first()
    analytic = kept.filter(estimate__comparison="analytic").first()
    share = selectors.simulated_comparison(selection=selection).share
    assert simulated and analytic and share

    record = decisions.record_create(
        actor_user=alice,
        team=acme,
        selection_id=selection.pk,
        text=DecisionText(title="Chat assistant"),
        candidate_ids=[simulated.pk, analytic.pk],
    )

    estimates = {row["candidate_id"]: row["estimate"] for row in record.candidates}
    assert estimates[simulated.pk]["simulated_share"] is None
    assert estimates[analytic.pk]["simulated_share"] == {
        "replicas": share.replicas,
        "low": share.low,
        "median": share.median,
        "high": share.high,
    }
    words = simulated_share_words(asdict(share))
    assert f"simulated for this goal read \u00d7{share.low:.2f} to \u00d7{share.high:.2f}" in words
    assert record_markdown(record).count(words) == 1
    assert alice_client.get(f"/decisions/{record.pk}/").content.decode().count(words) == 1
    # the candidate page says it in the same words
    candidates_page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert f"queues nothing, and {words}." in candidates_page
