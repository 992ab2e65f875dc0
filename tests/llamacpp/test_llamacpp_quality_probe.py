"""The quality probe on the real engine: the Gemma 3 270M GGUF served by llama-cpp-python
answers the project's probe greedily; the same model served with a very high temperature (a
deliberately degraded stack) answers worse, is flagged, and the flag is in the exported record.
"""

from __future__ import annotations

import pytest

from apps.benchmarks.choices import JobState
from apps.benchmarks.models import QualityResult
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.decisions.export import record_markdown
from apps.decisions.services import DecisionText, record_create
from apps.evidence.selectors import selection_evidence
from apps.selections.models import Candidate
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# Sampling this hot turns a 270M model's answers into noise; the load test itself is unchanged.
DEGRADED = {"temperature": 5.0}
OPTIONS = PlanOptions(
    request_count=4, load_points=({"rate_rps": 1.0},), warmup_requests=1, max_attempts=1
)


def _degraded_candidate(selection) -> Candidate:
    good = selection.candidates.get()
    stack = {**good.stack, "sampling": DEGRADED}
    return Candidate.objects.create(
        selection=selection, outcome="kept", rank=2, release=good.release,
        accelerator=good.accelerator, stack=stack, chosen=False,
    )  # fmt: skip


def _run(alice, acme, selection, runner) -> None:
    """One plan of the chosen candidate, to its end (one plan at a time keeps the order)."""
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=OPTIONS)
    job = plan.jobs.get()

    def finished() -> bool:
        job.refresh_from_db()
        return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

    wait_for(finished, timeout=300, what="the llama.cpp job to finish\n" + runner.output())
    assert job.state == JobState.SUCCEEDED, job.state_reason + "\n" + runner.output()


def test_a_stack_sampling_at_a_very_high_temperature_is_flagged_worse_in_the_record(
    alice, acme, llama_selection, runners, gemma_store, pinned_cpus
):
    runner = runners("llama-q", models=gemma_store)
    good = llama_selection.candidates.get()
    degraded = _degraded_candidate(llama_selection)
    _run(alice, acme, llama_selection, runner)  # the greedy stack first: the reference
    Candidate.objects.filter(pk=good.pk).update(chosen=False)
    Candidate.objects.filter(pk=degraded.pk).update(chosen=True)
    _run(alice, acme, llama_selection, runner)

    greedy = QualityResult.objects.get(job__candidate=good)
    hot = QualityResult.objects.get(job__candidate=degraded)
    assert greedy.sampling["temperature"] == 0.0 and hot.sampling["temperature"] == 5.0
    assert greedy.score["mode"] == "measured" and greedy.score["total"] == 8
    assert all(output["error"] is None for output in greedy.outputs + hot.outputs)
    assert greedy.score["correct"] > hot.score["correct"], (greedy.outputs, hot.outputs)

    evidence = selection_evidence(team=acme, selection_id=llama_selection.pk)
    reference, other = evidence.candidates
    assert reference.candidate_id == good.pk and other.status == "comparable"
    assert other.judgement.flag in {"worse", "faster_but_worse"}

    record = record_create(
        actor_user=alice, team=acme, selection_id=llama_selection.pk,
        text=DecisionText(title="Serve Gemma greedily", chosen_candidate_id=good.pk),
        candidate_ids=[good.pk, degraded.pk],
    )  # fmt: skip
    rows = {row["candidate_key"]: row for row in record.comparison["candidates"]}
    assert rows["B"]["quality"]["flag"] == other.judgement.flag
    markdown = record_markdown(record)
    assert f"**{other.judgement.flag_words}**" in markdown
    assert "| output quality checked | met |" in markdown
