"""Stack composition: orchestrators and KV layers on top of engines, where the goal needs them."""

from __future__ import annotations

import itertools

import pytest

from apps.catalog.models import Engine
from apps.selections import services
from apps.selections.choices import CandidateOutcome
from tests.selections.helpers import create_selection, kv_short_goal

pytestmark = pytest.mark.django_db
LAYERS = {"dynamo", "llm-d", "ray-serve-llm", "kserve", "lmcache", "mooncake"}


def _kept(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    selection = services.candidates_compute(actor_user=user, selection=selection)
    return list(selection.candidates.filter(outcome=CandidateOutcome.KEPT).order_by("rank"))


def _layer_slugs(row):
    return {layer.split(" ")[0] for layer in row.stack.get("layers", [])}


def _pd_goal(payload):
    payload["workload"].update(
        model="llama-3.1-70b",
        isl={"kind": "fixed", "value": 8192},
        osl={"kind": "fixed", "value": 1024},
        arrival={"process": "poisson", "rate_rps": 4},
        max_context=9216,
    )
    payload["slo"] = {"ttft_ms": 3000, "tpot_ms": 40, "percentile": 99, "attainment": 0.9}
    payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=8)


def test_every_orchestrator_and_kv_layer_is_composed_for_a_goal_that_needs_it(
    catalog, alice, acme, goal_payload
):
    _pd_goal(goal_payload)
    pd = _kept(alice, acme, goal_payload)
    kv_short_goal(goal_payload)
    goal_payload["title"] = "Long context"
    kv = _kept(alice, acme, goal_payload)

    composed = {slug for row in pd + kv for slug in _layer_slugs(row)}
    assert (
        composed
        == LAYERS
        == set(Engine.objects.exclude(kind="engine").values_list("slug", flat=True))
    )
    for row in pd + kv:
        for slug in _layer_slugs(row):
            layer = Engine.objects.get(slug=slug).releases.get()
            assert row.stack["engine"] in layer.serves_engines
            (hint,) = [h for h in row.hints if h["code"] == "layer_composed"]
            assert layer.serves_source in hint["message"]


def test_a_layered_candidate_follows_its_base_stack_with_the_reason_it_was_added(
    catalog, alice, acme, goal_payload
):
    _pd_goal(goal_payload)

    kept = _kept(alice, acme, goal_payload)

    ranks = [row.rank for row in kept]
    assert ranks == list(range(1, len(kept) + 1))
    for before, row in itertools.pairwise(kept):
        if _layer_slugs(row) and not _layer_slugs(before):
            base = {k: v for k, v in row.stack.items() if k != "layers"}
            assert base == {k: v for k, v in before.stack.items() if k != "layers"}
            assert row.score == before.score
            message = next(h["message"] for h in row.hints if h["code"] == "layer_composed")
            assert "P/D disaggregation" in message and "because" in message
            break
    else:
        pytest.fail("no layered candidate follows a base stack")


def test_no_layer_is_composed_for_a_goal_that_needs_none(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    kept = _kept(alice, acme, goal_payload)

    assert kept and not any(_layer_slugs(row) for row in kept)


def test_a_layer_is_never_put_on_an_engine_it_does_not_run_on(catalog, alice, acme, goal_payload):
    _pd_goal(goal_payload)

    kept = _kept(alice, acme, goal_payload)

    llm_d = [row for row in kept if "llm-d" in _layer_slugs(row)]
    assert llm_d and {row.stack["engine"] for row in llm_d} == {"vllm"}
    assert not any(_layer_slugs(row) for row in kept if row.stack["engine"] == "tgi")
