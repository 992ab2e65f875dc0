"""A plan's identity says whether its engines are simulated; the two kinds never share a plan."""

import pytest
from django.core.exceptions import ValidationError

from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.catalog.models import Engine, EngineRelease
from apps.selections.models import Candidate
from tests.benchmarks.factories import stack

pytestmark = pytest.mark.django_db


def _llama_candidate(selection, rows) -> Candidate:
    engine = Engine.objects.create(slug="llama-cpp", name="llama.cpp", kind="engine")
    release = EngineRelease.objects.create(engine=engine, version="b10488")
    return Candidate.objects.create(
        selection=selection,
        outcome="kept",
        rank=9,
        release=release,
        accelerator=rows["h100"],
        stack={**stack("h100-sxm"), "engine": "llama-cpp", "precision": "bf16"},
        chosen=True,
    )


def _plan(alice, acme, selection):
    options = PlanOptions(request_count=4, load_points=({"rate_rps": 1.0},))
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def test_a_plan_of_simulated_engines_says_so_in_its_identity(alice, acme, selection):
    assert _plan(alice, acme, selection).identity["simulated"] is True


def test_a_plan_of_a_real_llama_cpp_engine_is_not_simulated(alice, acme, selection, rows):
    rows["model"].checkpoint = "/models/gemma-3-270m-q4_k_m.gguf"
    rows["model"].save()
    selection.candidates.update(chosen=False)
    _llama_candidate(selection, rows)
    plan = _plan(alice, acme, selection)
    assert plan.identity["simulated"] is False
    assert plan.jobs.get().engine["adapter"] == "llama-cpp"


def test_simulated_and_real_engines_cannot_share_a_plan(alice, acme, selection, rows):
    rows["model"].checkpoint = "/models/gemma-3-270m-q4_k_m.gguf"
    rows["model"].save()
    _llama_candidate(selection, rows)
    with pytest.raises(ValidationError, match="cannot share a plan"):
        _plan(alice, acme, selection)
