from apps.audit.models import AuditEvent
from tests.benchmarks.factories import RunnerClient, enrolled_runner


def test_a_claim_answers_the_job_spec_and_starts_the_job(attempt, sim_runner):
    runner, api = sim_runner
    response = api.post(f"attempts/{attempt.pk}/claim")
    assert response.status_code == 200, response.content
    spec = response.json()
    assert spec["attempt_id"] == attempt.pk and spec["job_id"] == attempt.job_id
    assert spec["engine"]["adapter"] == "simulated"
    assert len(spec["requests"]) == 20
    assert spec["load_points"] == [{"index": 0, "rate_rps": 1.0}, {"index": 1, "rate_rps": 2.0}]
    assert spec["harness"]["ignore_eos"] is True
    attempt.refresh_from_db()
    assert (attempt.state, attempt.runner_id) == ("claimed", runner.pk)
    assert attempt.lease_expires_at is not None
    assert attempt.job.state == "running"
    assert api.get(f"attempts/{attempt.pk}/spec").json() == spec
    assert AuditEvent.objects.filter(action="attempt.claim", actor_type="runner").count() == 1


def test_a_second_claim_of_the_same_attempt_is_refused_with_409(attempt, sim_runner, alice, acme):
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    again = api.post(f"attempts/{attempt.pk}/claim")
    assert again.status_code == 409 and again.json()["code"] == "already_claimed"
    _, other_credential = enrolled_runner(alice, acme, name="sim-2")
    other = RunnerClient(other_credential).post(f"attempts/{attempt.pk}/claim")
    assert other.status_code == 409 and other.json()["code"] == "already_claimed"


def test_a_runner_of_another_team_cannot_claim_the_job(attempt, charlie, globex):
    _, credential = enrolled_runner(charlie, globex, name="globex-sim")
    response = RunnerClient(credential).post(f"attempts/{attempt.pk}/claim")
    assert response.status_code == 404
    attempt.refresh_from_db()
    assert attempt.state == "dispatched" and attempt.runner_id is None


def test_a_runner_whose_labels_do_not_fit_is_refused_with_403(attempt, alice, acme):
    _, credential = enrolled_runner(alice, acme, name="l40s-box", accelerator="l40s")
    assert RunnerClient(credential).post(f"attempts/{attempt.pk}/claim").status_code == 403


def test_only_the_claiming_runner_reaches_the_attempt_afterwards(attempt, sim_runner, alice, acme):
    _, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    _, credential = enrolled_runner(alice, acme, name="sim-2")
    other = RunnerClient(credential)
    assert other.get(f"attempts/{attempt.pk}/spec").status_code == 404
    assert other.post(f"attempts/{attempt.pk}/finish", {"state": "failed"}).status_code == 404


def test_a_claim_of_a_cancelled_job_is_refused(attempt, sim_runner, alice_client):
    _, api = sim_runner
    alice_client.post(f"/benchmarks/jobs/{attempt.job_id}/cancel/")
    response = api.post(f"attempts/{attempt.pk}/claim")
    assert response.status_code == 409 and response.json()["code"] == "cancelled"
