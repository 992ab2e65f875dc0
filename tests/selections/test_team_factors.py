"""The team's measured runs time a recomputed list, and a recompute keeps the runs linked."""

from __future__ import annotations

import pytest

from apps.audit.models import AuditEvent
from apps.benchmarks.models import BenchmarkJob
from apps.evidence.models import EvidenceRun
from apps.selections import services
from apps.selections.choices import CandidateOutcome
from tests.evidence.factories import measured_attempt, plan_for
from tests.evidence.samples import streamed
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


def _measured_leader(alice, acme, goal_payload):
    """A computed selection whose leading vLLM stack on one H100 was measured at 2 and 4
    clients (TTFT 0.1 s, two 0.02 s gaps per request)."""
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    leader = selection.candidates.filter(
        outcome=CandidateOutcome.KEPT, stack__engine="vllm", stack__layers=[]
    ).order_by("rank")[0]
    plan = plan_for(selection, load_points=[{"concurrency": 2}, {"concurrency": 4}])
    records = [streamed(i, ttft_s=0.1, gaps=[0.02, 0.02]) for i in range(4)]
    attempt = measured_attempt(plan, leader, records)
    return selection, leader, attempt


def test_a_recompute_links_the_jobs_and_runs_to_the_new_candidate_of_the_same_stack(
    catalog, alice, acme, goal_payload
):
    selection, leader, attempt = _measured_leader(alice, acme, goal_payload)
    run = EvidenceRun.objects.get(attempt=attempt)
    assert run.candidate_id == leader.pk

    services.candidates_compute(actor_user=alice, selection=selection)

    job = BenchmarkJob.objects.get(pk=attempt.job_id)
    run.refresh_from_db()
    assert job.candidate_id != leader.pk and job.candidate_id == run.candidate_id
    assert job.candidate.selection_id == selection.pk
    assert job.candidate.stack == leader.stack
    event = AuditEvent.objects.filter(action="selection.candidates_compute").latest("pk")
    assert event.after["jobs_and_runs_linked_again"] == 2


def test_the_teams_measured_runs_refit_the_roofline_that_times_their_engine_on_their_gpu(
    catalog, alice, acme, alice_client, goal_payload
):
    selection, leader, _ = _measured_leader(alice, acme, goal_payload)
    assert leader.estimate["method"] != "roofline-team-fitted"
    evidence = alice_client.get(f"/evidence/selections/{selection.pk}/").content.decode()
    assert 'id="refit-use"' in evidence

    services.candidates_compute(actor_user=alice, selection=selection)

    kept = selection.candidates.filter(outcome=CandidateOutcome.KEPT)
    vllm = [row for row in kept if row.stack["engine"] == "vllm"]
    others = [row for row in kept if row.stack["engine"] != "vllm"]
    assert vllm and others
    assert {row.estimate["latency"]["method"] for row in vllm} == {"roofline-team-fitted"}
    assert "roofline-team-fitted" not in {row.estimate["latency"]["method"] for row in others}
    event = AuditEvent.objects.filter(action="selection.candidates_compute").latest("pk")
    assert set(event.after["team_factors"]) == {"h100-sxm/vllm"}
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    rule = page.split('id="ranking-rule">', 1)[1].split("</p>", 1)[0]
    assert any(row.estimate["comparison"] == "simulated" for row in vllm)
    assert "factors fitted on the team's own measured runs" in rule


def test_a_row_timed_with_the_teams_factors_says_what_fitted_them_and_how_far_they_read_it(
    catalog, alice, acme, alice_client, goal_payload
):
    selection, _, _ = _measured_leader(alice, acme, goal_payload)
    calibration = alice_client.get(f"/api/v1/selections/{selection.pk}/evidence/").json()[
        "calibration"
    ]
    (fit,) = calibration["fits"]
    (measured,) = calibration["errors"]
    after = {row["metric"]: row["calibrated_error"] for row in measured["rows"]}

    services.candidates_compute(actor_user=alice, selection=selection)

    row = selection.candidates.filter(outcome=CandidateOutcome.KEPT, stack__engine="vllm")[0]
    bands = row.estimate["error_band"]
    points = f"fitted on {fit['measurements']} measured load points of the team's own runs"
    for metric in ("ttft", "tpot"):
        reason = bands[f"{metric}_ms"]["reason"]
        assert bands[f"{metric}_ms"]["band"] is None
        assert points in reason
        measured = f"{metric.upper()} {after[f'{metric}_ms']:+.0%} against the refitted"
        assert f"those runs measured {measured} analytic estimate at each run's own load" in reason
    # goodput was not re-estimated by the fit: only the count is said
    assert points in bands["goodput_per_gpu_rps"]["reason"]
    assert "those runs measured" not in bands["goodput_per_gpu_rps"]["reason"]
    event = AuditEvent.objects.filter(action="selection.candidates_compute").latest("pk")
    assert event.after["team_factors"]["h100-sxm/vllm"]["measurements"] == fit["measurements"]


def test_a_teams_runs_of_one_goal_time_its_next_goal_and_no_other_teams(
    catalog, alice, acme, charlie, globex, goal_payload
):
    measured, _, _ = _measured_leader(alice, acme, goal_payload)
    goal_payload["title"] = "Longer prompts"
    goal_payload["workload"]["isl"] = {"kind": "fixed", "value": 2048}
    later = create_selection(user=alice, team=acme, payload=goal_payload)
    elsewhere = create_selection(user=charlie, team=globex, payload=goal_payload)

    services.candidates_compute(actor_user=alice, selection=later)
    services.candidates_compute(actor_user=charlie, selection=elsewhere)

    def vllm_rows(selection):
        kept = selection.candidates.filter(outcome=CandidateOutcome.KEPT, stack__engine="vllm")
        assert kept
        return kept

    assert {row.estimate["latency"]["method"] for row in vllm_rows(later)} == {
        "roofline-team-fitted"
    }
    reason = vllm_rows(later)[0].estimate["error_band"]["tpot_ms"]["reason"]
    assert f"of the team's own runs (goal Chat assistant #{measured.pk})" in reason
    assert "roofline-team-fitted" not in {
        row.estimate["latency"]["method"] for row in vllm_rows(elsewhere)
    }
    events = AuditEvent.objects.filter(action="selection.candidates_compute")
    fit = events.get(object_id=str(later.pk)).after["team_factors"]["h100-sxm/vllm"]
    assert fit["goals"] == [f"Chat assistant #{measured.pk}"]
    assert events.get(object_id=str(elsewhere.pk)).after["team_factors"] == {}
