"""Replacing a goal deletes its candidates in a few statements, and what pointed at them stays."""

from __future__ import annotations

from apps.benchmarks.models import BenchmarkJob
from apps.evidence.models import EvidenceRun
from apps.selections.models import Candidate
from apps.selections.services import selection_update
from tests.decisions.factories import make_approver
from tests.security.alice_world import build_alice_world


def test_replacing_the_goal_deletes_the_candidates_and_unlinks_their_jobs_and_runs(
    alice, bob, acme
):
    world = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    selection, job = world.objects["selection"], world.objects["job"]
    run = world.objects["evidence_run"]
    EvidenceRun.objects.filter(pk=run.pk).update(candidate=job.candidate)
    assert job.candidate_id is not None
    selection_update(
        actor_user=alice,
        selection=selection,
        data={
            "title": "new goal",
            "workload": {**selection.workload, "model": selection.model.slug},
            "slo": selection.slo,
            "constraints": selection.constraints or {},
        },
    )
    assert not Candidate.objects.filter(selection=selection).exists()
    assert BenchmarkJob.objects.get(pk=job.pk).candidate_id is None
    assert EvidenceRun.objects.get(pk=run.pk).candidate_id is None
