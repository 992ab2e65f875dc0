from datetime import timedelta

from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.benchmarks import dispatch
from apps.benchmarks.dispatch import reap_expired_leases
from apps.benchmarks.models import JobAttempt
from apps.benchmarks.tasks import reap_expired_leases_task


def _claim_and_expire(api, attempt_id: int) -> None:
    assert api.post(f"attempts/{attempt_id}/claim").status_code == 200
    JobAttempt.objects.filter(pk=attempt_id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def test_an_expired_lease_is_lost_and_a_new_attempt_is_dispatched(attempt, sim_runner, plan):
    runner, api = sim_runner
    _claim_and_expire(api, attempt.pk)
    report = reap_expired_leases()
    assert (report.lost, report.redispatched) == (1, 1)
    attempt.refresh_from_db()
    assert attempt.state == "lost" and runner.name in attempt.reason
    job = plan.jobs.get()
    second = job.attempts.get(number=2)
    assert second.state == "dispatched" and second.queue == attempt.queue
    assert job.state == "queued" and job.state_reason.startswith("Attempt 1 lost (Lease expired")
    # The old attempt's results are refused: only the new attempt can store any.
    late = api.post(f"attempts/{attempt.pk}/finish", {"state": "succeeded"})
    assert late.status_code == 409 and late.json()["code"] == "finished"


def test_after_the_last_attempt_is_lost_the_job_fails_with_the_reason(attempt, sim_runner, plan):
    _, api = sim_runner
    for number in range(1, plan.max_attempts + 1):
        current = plan.jobs.get().attempts.get(number=number)
        _claim_and_expire(api, current.pk)
        reap_expired_leases()
    job = plan.jobs.get()
    assert job.attempts.count() == plan.max_attempts == 3
    assert job.state == "failed"
    assert job.state_reason.startswith("Attempt 3 of 3 lost. Lease expired at")
    plan.refresh_from_db()
    assert plan.state == "failed"


def test_running_the_reaper_twice_does_what_running_it_once_does(attempt, sim_runner, plan):
    _, api = sim_runner
    _claim_and_expire(api, attempt.pk)
    first = reap_expired_leases_task()
    snapshot = (
        list(JobAttempt.objects.order_by("pk").values_list("pk", "state", "number")),
        AuditEvent.objects.count(),
    )
    second = reap_expired_leases_task()
    assert first["lost"] == 1 and second["lost"] == 0 and second["redispatched"] == 0
    assert snapshot == (
        list(JobAttempt.objects.order_by("pk").values_list("pk", "state", "number")),
        AuditEvent.objects.count(),
    )


def test_a_cancel_requested_job_whose_runner_vanished_ends_cancelled(
    attempt, sim_runner, alice_client, plan
):
    _, api = sim_runner
    _claim_and_expire(api, attempt.pk)
    alice_client.post(f"/benchmarks/jobs/{attempt.job_id}/cancel/")
    reap_expired_leases()
    job = plan.jobs.get()
    assert job.state == "cancelled" and job.attempts.count() == 1


def test_a_stale_dispatch_is_sent_again_when_an_idle_runner_is_online(
    attempt, sim_runner, settings, monkeypatch, django_capture_on_commit_callbacks
):
    JobAttempt.objects.filter(pk=attempt.pk).update(
        published_at=timezone.now() - timedelta(seconds=settings.RUNNER_REDISPATCH_AFTER_S + 1)
    )
    sent = []
    monkeypatch.setattr(
        dispatch.celery_app, "send_task", lambda name, **options: sent.append((name, options))
    )
    with django_capture_on_commit_callbacks(execute=True):
        first = reap_expired_leases()
    second = reap_expired_leases()
    assert (first.republished, second.republished) == (1, 0)
    assert sent == [
        (
            "stackselect.runner.run_attempt",
            {"kwargs": {"attempt_id": attempt.pk, "gpu_count": 1}, "queue": attempt.queue},
        )
    ]
