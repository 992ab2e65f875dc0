"""A fired trigger's retest plan: the record's plan options, the changed field from now."""

from __future__ import annotations

import pytest

from apps.audit.services import Actor
from apps.benchmarks.models import BenchmarkPlan
from apps.catalog.models import EngineRelease
from apps.catalog.services import entry_create, entry_update
from apps.core.errors import NotFoundError
from apps.decisions.retests import retest_plan_create, trigger_acknowledge
from apps.decisions.tasks import sweep
from tests.decisions.factories import accepted, measured_by_runner

CURATOR = Actor.system("curator")
NEW_CHECKPOINT = "meta-llama/Llama-3.1-8B-Instruct-rev2"


@pytest.fixture
def record(acme, alice, approver_bob, selection):
    measured_by_runner(alice, acme, selection)
    return accepted(alice, approver_bob, acme, selection)


def without_model(identity: dict) -> dict:
    return {key: value for key, value in identity.items() if key != "model"}


def test_a_model_change_retest_keeps_the_identity_but_the_checkpoint(record, rows, acme, alice):
    entry_update(actor=CURATOR, instance=rows["model"], changes={"checkpoint": NEW_CHECKPOINT})
    sweep()
    trigger = record.triggers.get()
    original = BenchmarkPlan.objects.get(pk=record.evidence[0]["plan_id"])

    trigger = retest_plan_create(actor_user=alice, team=acme, trigger_id=trigger.pk)

    plan = trigger.plan
    assert plan.selection_id == record.selection_id
    assert without_model(plan.identity) == without_model(original.identity)
    assert plan.identity["model"]["checkpoint"] == NEW_CHECKPOINT
    assert [job.candidate_id for job in plan.jobs.all()] == [record.candidates[0]["candidate_id"]]
    assert trigger.plan_note == ""


def test_an_engine_release_retest_says_what_the_plan_cannot_express(record, rows, acme, alice):
    engine = rows["release"].engine
    entry_create(actor=CURATOR, model=EngineRelease, values={"engine": engine, "version": "1.0.0"})
    sweep()
    trigger = retest_plan_create(actor_user=alice, team=acme, trigger_id=record.triggers.get().pk)
    assert trigger.plan is not None
    assert trigger.changed_field == "stack.engine_version"
    assert trigger.detail["version"] == "1.0.0"
    assert "catalog release" in trigger.plan_note


def test_making_the_plan_twice_makes_one_plan(record, rows, acme, alice):
    entry_update(actor=CURATOR, instance=rows["model"], changes={"checkpoint": NEW_CHECKPOINT})
    sweep()
    trigger = record.triggers.get()
    first = retest_plan_create(actor_user=alice, team=acme, trigger_id=trigger.pk).plan
    second = retest_plan_create(actor_user=alice, team=acme, trigger_id=trigger.pk).plan
    assert first == second


def test_charlie_cannot_touch_acme_triggers(record, rows, globex, charlie):
    entry_update(actor=CURATOR, instance=rows["model"], changes={"checkpoint": NEW_CHECKPOINT})
    sweep()
    trigger = record.triggers.get()
    with pytest.raises(NotFoundError):
        trigger_acknowledge(actor_user=charlie, team=globex, trigger_id=trigger.pk)
    with pytest.raises(NotFoundError):
        retest_plan_create(actor_user=charlie, team=globex, trigger_id=trigger.pk)


def test_a_retest_of_a_speculative_plan_speculates_the_same_way(record, rows, acme, alice):
    ngram = {"method": "ngram", "draft_model": None, "num_tokens": 4}
    original = BenchmarkPlan.objects.get(pk=record.evidence[0]["plan_id"])
    original.identity = {**original.identity, "speculative": ngram}
    original.save(update_fields=["identity"])
    entry_update(actor=CURATOR, instance=rows["model"], changes={"checkpoint": NEW_CHECKPOINT})
    sweep()

    plan = retest_plan_create(actor_user=alice, team=acme, trigger_id=record.triggers.get().pk).plan

    assert plan.identity["speculative"] == ngram
    assert {job.engine["options"]["speculative"]["method"] for job in plan.jobs.all()} == {"ngram"}


@pytest.mark.parametrize("temperature", [0.7, None])
def test_a_retest_samples_as_the_records_plan_did(record, rows, acme, alice, temperature):
    """A plan made before plans chose a temperature sent none; its retest sends none either."""
    original = BenchmarkPlan.objects.get(pk=record.evidence[0]["plan_id"])
    harness = dict(original.identity["harness"])
    harness.pop("temperature")
    if temperature is not None:
        harness["temperature"] = temperature
    original.identity = {**original.identity, "harness": harness}
    original.save(update_fields=["identity"])
    entry_update(actor=CURATOR, instance=rows["model"], changes={"checkpoint": NEW_CHECKPOINT})
    sweep()

    plan = retest_plan_create(actor_user=alice, team=acme, trigger_id=record.triggers.get().pk).plan

    assert plan.temperature == temperature
    assert ("temperature" in plan.identity["harness"]) is (temperature is not None)
