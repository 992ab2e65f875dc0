"""Idempotency keys name an upload within its attempt: the attack of issue 16 (team B's runner
uploading under team A's predictable future keys) no longer disturbs team A's uploads."""

from __future__ import annotations

import pytest

from apps.benchmarks.models import ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import (
    RunnerClient,
    enrolled_runner,
    result_document,
    selection_with_candidates,
)

OPTIONS = PlanOptions(
    run_mode="simulated", request_count=20, load_points=({"rate_rps": 1.0}, {"rate_rps": 2.0})
)


def agent_key(attempt_id: int, load_point: int, chunk: int = 0) -> str:
    """The key the agent derives (runner/stackselect_runner/uploads.py): easy to predict."""
    return f"attempt-{attempt_id}.load-point-{load_point}.chunk-{chunk}"


def claimed_attempt(team, admin, rows, runner_name: str):
    selection = selection_with_candidates(team, admin, rows, layouts=[("h100-sxm", 1, "bf16")])
    _, credential = enrolled_runner(admin, team, name=runner_name)
    plan = plan_create(actor_user=admin, team=team, selection_id=selection.pk, options=OPTIONS)
    attempt = plan.jobs.get().attempts.get()
    api = RunnerClient(credential)
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    return attempt, api


@pytest.fixture
def two_teams(rows, alice, acme, charlie, globex):
    victim = claimed_attempt(acme, alice, rows, "acme-1")
    attacker = claimed_attempt(globex, charlie, rows, "globex-1")
    return victim, attacker


def test_another_teams_runner_using_the_victims_future_keys_does_not_disturb_its_uploads(
    two_teams,
):
    (victim, victim_api), (attacker, attacker_api) = two_teams
    for load_point in (0, 1):
        stolen = agent_key(victim.pk, load_point)
        answer = attacker_api.upload(attacker.pk, result_document(load_point), key=stolen)
        assert answer.status_code == 201, answer.content
    for load_point in (0, 1):
        answer = victim_api.upload(
            victim.pk, result_document(load_point), key=agent_key(victim.pk, load_point)
        )
        assert answer.status_code == 201, answer.content
    finish = victim_api.post(f"attempts/{victim.pk}/finish", {"state": "succeeded"})
    assert finish.json()["job_state"] == "succeeded"
    assert ResultUpload.objects.filter(attempt=victim).count() == 2
    assert ResultUpload.objects.filter(attempt=attacker).count() == 2


def test_a_replayed_key_answers_only_the_own_attempts_upload(two_teams):
    (victim, victim_api), (attacker, attacker_api) = two_teams
    key = agent_key(victim.pk, 0)
    stored = victim_api.upload(victim.pk, result_document(0), key=key)
    mine = attacker_api.upload(attacker.pk, result_document(0), key=key)
    assert (stored.status_code, mine.status_code) == (201, 201)
    assert mine.json()["upload_id"] != stored.json()["upload_id"]
    again = victim_api.upload(victim.pk, result_document(0), key=key)
    assert (again.status_code, again.json()["upload_id"]) == (200, stored.json()["upload_id"])


def test_the_victims_attempt_answers_404_whether_a_key_exists_or_not(two_teams):
    (victim, victim_api), (_, attacker_api) = two_teams
    used = agent_key(victim.pk, 0)
    assert victim_api.upload(victim.pk, result_document(0), key=used).status_code == 201
    answers = [
        attacker_api.upload(victim.pk, result_document(0), key=key)
        for key in (used, agent_key(victim.pk, 1))
    ]
    assert [answer.status_code for answer in answers] == [404, 404]
    assert answers[0].json() == answers[1].json()


@pytest.fixture
def claimed(attempt, sim_runner):
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    return attempt, api


def test_a_chunk_count_beyond_the_plans_requests_is_refused(claimed):
    attempt, api = claimed
    document = {**result_document(0), "chunk_count": 10**9, "chunk_index": 10**9 - 1}
    answer = api.upload(attempt.pk, document, key="huge")
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("chunk_count:")
    assert not ResultUpload.objects.exists()


def test_chunks_of_one_load_point_must_agree_on_the_chunk_count(claimed):
    attempt, api = claimed
    records = result_document(0)["records"]
    first = {**result_document(0, records[:2]), "chunk_count": 2, "chunk_index": 0}
    other = {**result_document(0, records[2:]), "chunk_count": 3, "chunk_index": 1}
    assert api.upload(attempt.pk, first, key="c0").status_code == 201
    answer = api.upload(attempt.pk, other, key="c1")
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("chunk_count:")


def test_more_records_than_the_plan_sends_are_refused(claimed):
    attempt, api = claimed
    record = result_document(0)["records"][0]
    records = [{**record, "index": index, "send_s": index * 0.01} for index in range(21)]
    answer = api.upload(attempt.pk, result_document(0, records), key="many")
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("records:")
