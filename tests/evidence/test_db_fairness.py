"""The fair-comparison checklist on the evidence page and in the decision record, and the
quality flag of a candidate whose probe answers worse than the reference's."""

from __future__ import annotations

import pytest
from django.urls import reverse
from stackselect_domain.quality import BASE_PROMPTS

from apps.benchmarks.models import QualityResult
from apps.decisions.export import record_markdown
from apps.decisions.services import DecisionText, record_create
from apps.evidence.selectors import selection_evidence
from tests.evidence.conftest import RATES
from tests.evidence.factories import measured_attempt, plan_for
from tests.evidence.samples import streamed

pytestmark = pytest.mark.django_db
RECORDS = [streamed(i, ttft_s=0.1, gaps=[0.02, 0.02]) for i in range(4)]
RIGHT = {"add": "12", "multiply": "27", "subtract": "99", "capital": "Paris", "week": "7",
         "sky": "Blue", "upper": "OK", "digits": "1,2,3"}  # fmt: skip


def _statuses(items) -> dict[str, str]:
    return {item.key: item.status for item in items}


def _probe(attempt, answers: dict[str, str]) -> None:
    outputs = [{"id": p.id, "text": answers.get(p.id, "no idea")} for p in BASE_PROMPTS]
    correct = sum(answers.get(p.id) == RIGHT[p.id] for p in BASE_PROMPTS)
    score = {"correct": correct, "total": len(BASE_PROMPTS), "mode": "measured"}
    QualityResult.objects.create(
        attempt=attempt, job=attempt.job, probe_set="p", outputs=outputs, score=score
    )


def test_two_candidates_with_different_request_seeds_miss_the_same_request_set_item(
    client, alice, acme, selection, candidates
):
    measured_attempt(plan_for(selection, load_points=RATES, seed=0), candidates[0], RECORDS)
    measured_attempt(plan_for(selection, load_points=RATES, seed=7), candidates[1], RECORDS)

    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    statuses = _statuses(evidence.checklist)
    assert statuses["same_requests"] == "not_met"
    assert statuses["same_checkpoint"] == "met" and statuses["curves"] == "met"
    assert statuses["fixed_output_lengths"] == "met"
    # Neither run was probed or tuned: said so, not passed quietly.
    assert statuses["quality_checked"] == "not_met" and statuses["tuned_settings"] == "unknown"

    client.force_login(alice)
    page = client.get(reverse("evidence:selection", args=[selection.pk])).content.decode()
    assert 'data-item="same_requests" data-status="not_met"' in page
    assert 'data-item="same_checkpoint" data-status="met"' in page

    record = record_create(
        actor_user=alice, team=acme, selection_id=selection.pk,
        text=DecisionText(title="Pick one", chosen_candidate_id=candidates[0].pk),
    )  # fmt: skip
    assert "same request set (seed and count)" in record.comparison["missed"]
    assert "> **This comparison misses:** same request set (seed and count)" in record_markdown(
        record
    )


def test_the_same_seed_meets_the_request_set_item(acme, selection, candidates):
    plan = plan_for(selection, load_points=RATES, seed=3)
    for candidate in candidates:
        measured_attempt(plan, candidate, RECORDS)
    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    assert _statuses(evidence.checklist)["same_requests"] == "met"


def test_a_candidate_answering_worse_than_the_reference_is_flagged_in_the_record(
    alice, acme, selection, candidates
):
    plan = plan_for(selection, load_points=RATES)
    reference = measured_attempt(plan, candidates[0], RECORDS)
    worse = measured_attempt(plan, candidates[1], RECORDS)
    _probe(reference, RIGHT)
    _probe(worse, {**RIGHT, "add": "13", "capital": "Rome"})  # 6/8 against 8/8

    evidence = selection_evidence(team=acme, selection_id=selection.pk, reference=None)
    by_candidate = {entry.candidate_id: entry for entry in evidence.candidates}
    judged = by_candidate[candidates[1].pk].judgement
    assert (judged.correct, judged.total) == (6, 8) and judged.agreement == 0.75
    assert judged.flag == "worse"  # same speed: not faster, but worse
    assert by_candidate[candidates[0].pk].judgement.flag is None

    record = record_create(
        actor_user=alice, team=acme, selection_id=selection.pk,
        text=DecisionText(title="Pick one", chosen_candidate_id=candidates[0].pk),
    )  # fmt: skip
    rows = {row["candidate_key"]: row for row in record.comparison["candidates"]}
    assert rows["B"]["quality"]["flag"] == "worse"
    assert "| B | 6/8 correct (75%) | 75% | **worse** |" in record_markdown(record)


def test_a_small_gap_within_the_goals_tolerance_is_not_flagged(acme, selection, candidates):
    selection.constraints = {**selection.constraints, "quality_tolerance": 0.25}
    selection.save(update_fields=["constraints"])
    plan = plan_for(selection, load_points=RATES)
    _probe(measured_attempt(plan, candidates[0], RECORDS), RIGHT)
    _probe(measured_attempt(plan, candidates[1], RECORDS), {**RIGHT, "add": "13"})
    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    assert [entry.judgement.flag for entry in evidence.candidates] == [None, None]
