from datetime import timedelta

from django.utils import timezone

from apps.benchmarks.models import JobAttempt


def test_a_heartbeat_extends_the_lease_and_starts_the_attempt(attempt, sim_runner):
    _, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    JobAttempt.objects.filter(pk=attempt.pk).update(
        lease_expires_at=timezone.now() + timedelta(seconds=5)
    )
    answer = api.post(
        "heartbeat",
        {"attempt_id": attempt.pk, "progress": {"load_point": 0, "done": 3, "total": 20}},
    ).json()
    attempt.refresh_from_db()
    assert answer["cancel"] is False
    assert attempt.lease_expires_at > timezone.now() + timedelta(seconds=50)
    assert attempt.state == "running"
    assert attempt.job.progress["done"] == 3


def test_a_cancel_in_the_page_reaches_the_runner_in_its_next_heartbeat(
    attempt, sim_runner, alice_client, plan
):
    _, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    assert api.post("heartbeat", {"attempt_id": attempt.pk}).json()["cancel"] is False
    page = alice_client.get(f"/benchmarks/jobs/{attempt.job_id}/").content.decode()
    assert 'id="cancel-job"' in page and "data-confirm=" in page
    alice_client.post(f"/benchmarks/jobs/{attempt.job_id}/cancel/")
    job = plan.jobs.get()
    assert job.state == "running" and job.cancel_requested
    assert api.post("heartbeat", {"attempt_id": attempt.pk}).json()["cancel"] is True
    finish = api.post(f"attempts/{attempt.pk}/finish", {"state": "cancelled", "reason": "asked"})
    assert finish.json()["job_state"] == "cancelled"
    plan.refresh_from_db()
    assert plan.state == "cancelled"


def test_cancelling_a_job_no_runner_holds_ends_it_at_once(attempt, alice_client, plan):
    alice_client.post(f"/benchmarks/{plan.pk}/cancel/")
    job = plan.jobs.get()
    attempt.refresh_from_db()
    assert (job.state, attempt.state) == ("cancelled", "cancelled")


def test_a_heartbeat_for_an_attempt_that_was_reaped_tells_the_runner_to_stop(attempt, sim_runner):
    _, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    JobAttempt.objects.filter(pk=attempt.pk).update(state="lost")
    answer = api.post("heartbeat", {"attempt_id": attempt.pk}).json()
    assert answer["cancel"] is True and answer["lease_expires_at"] is None


def test_the_progress_json_follows_the_runner(attempt, sim_runner, alice_client, plan):
    _, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    api.post(
        f"attempts/{attempt.pk}/progress",
        {"load_point": 0, "done": 10, "total": 20, "message": "rate 1 req/s"},
    )
    row = alice_client.get(f"/benchmarks/{plan.pk}/progress.json").json()["jobs"][0]
    assert row["state"] == "running" and row["fraction"] == 0.25  # half of load point 0 of 2
    assert row["message"] == "rate 1 req/s"
