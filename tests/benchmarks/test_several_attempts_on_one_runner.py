"""A multi-GPU runner holds several attempts at once while their GPU counts fit its GPUs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks import dispatch
from apps.benchmarks.dispatch import reap_expired_leases
from apps.benchmarks.models import JobAttempt
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import RunnerClient, enrolled_runner, selection_with_candidates


def _attempts(alice, acme, rows, count: int) -> list[JobAttempt]:
    selection = selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")] * count
    )
    options = PlanOptions(run_mode="simulated", request_count=10, load_points=({"rate_rps": 1.0},))
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)
    return [job.attempts.get() for job in plan.jobs.order_by("pk")]


@pytest.fixture
def two_gpu_runner(alice, acme, rows):
    runner, credential = enrolled_runner(alice, acme, name="sim-2", gpu_count=2)
    return runner, RunnerClient(credential)


def test_a_two_gpu_runner_claims_two_one_gpu_attempts_and_is_refused_a_third(
    alice, acme, rows, two_gpu_runner
):
    _, api = two_gpu_runner
    first, second, third = _attempts(alice, acme, rows, 3)
    assert api.post(f"attempts/{first.pk}/claim").status_code == 200
    assert api.post(f"attempts/{second.pk}/claim").status_code == 200
    refused = api.post(f"attempts/{third.pk}/claim")
    assert refused.status_code == 409 and refused.json()["code"] == "runner_full"
    third.refresh_from_db()
    assert third.state == "dispatched" and third.runner is None

    api.post(f"attempts/{first.pk}/finish", {"state": "failed", "reason": "engine died"})
    assert api.post(f"attempts/{third.pk}/claim").status_code == 200


def test_one_heartbeat_extends_every_listed_lease_and_answers_each_attempt(
    alice, acme, rows, two_gpu_runner, alice_client
):
    _, api = two_gpu_runner
    first, second = _attempts(alice, acme, rows, 2)
    for attempt in (first, second):
        api.post(f"attempts/{attempt.pk}/claim")
    JobAttempt.objects.filter(pk__in=[first.pk, second.pk]).update(
        lease_expires_at=timezone.now() + timedelta(seconds=5)
    )
    alice_client.post(f"/benchmarks/jobs/{second.job_id}/cancel/")
    answer = api.post(
        "heartbeat",
        {
            "attempts": [
                {"attempt_id": first.pk, "progress": {"load_point": 0, "done": 2, "total": 10}},
                {"attempt_id": second.pk},
            ]
        },
    ).json()

    by_id = {entry["attempt_id"]: entry for entry in answer["attempts"]}
    assert by_id[first.pk]["cancel"] is False and by_id[second.pk]["cancel"] is True
    assert answer["cancel"] is False and answer["lease_expires_at"] is None  # not one attempt
    for attempt in (first, second):
        attempt.refresh_from_db()
        assert attempt.lease_expires_at > timezone.now() + timedelta(seconds=50)
        assert attempt.state == "running"
    assert first.job.progress["done"] == 2


def test_a_heartbeat_listing_an_attempt_twice_is_a_400(alice, acme, rows, two_gpu_runner):
    _, api = two_gpu_runner
    (attempt,) = _attempts(alice, acme, rows, 1)
    api.post(f"attempts/{attempt.pk}/claim")
    twice = {"attempts": [{"attempt_id": attempt.pk}, {"attempt_id": attempt.pk}]}
    answer = api.post("heartbeat", twice)
    assert answer.status_code == 400 and "attempts" in answer.json()


def test_the_single_attempt_heartbeat_still_answers_in_both_forms(
    alice, acme, rows, two_gpu_runner
):
    _, api = two_gpu_runner
    (attempt,) = _attempts(alice, acme, rows, 1)
    api.post(f"attempts/{attempt.pk}/claim")
    answer = api.post("heartbeat", {"attempt_id": attempt.pk}).json()
    assert answer["cancel"] is False and answer["lease_expires_at"] is not None
    assert [entry["attempt_id"] for entry in answer["attempts"]] == [attempt.pk]


def test_a_stale_dispatch_is_sent_again_only_while_a_busy_runner_has_a_gpu_free(
    alice, acme, rows, two_gpu_runner, settings, monkeypatch, django_capture_on_commit_callbacks
):
    _, api = two_gpu_runner
    first, second, third = _attempts(alice, acme, rows, 3)
    api.post(f"attempts/{first.pk}/claim")  # one of its two GPUs is taken
    stale = timezone.now() - timedelta(seconds=settings.RUNNER_REDISPATCH_AFTER_S + 1)
    JobAttempt.objects.filter(pk__in=[second.pk, third.pk]).update(published_at=stale)
    sent: list[int] = []
    monkeypatch.setattr(
        dispatch.celery_app,
        "send_task",
        lambda name, **options: sent.append(options["kwargs"]["attempt_id"]),
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_expired_leases().republished == 2
    assert sorted(sent) == [second.pk, third.pk]

    api.post(f"attempts/{second.pk}/claim")  # now both GPUs are taken
    JobAttempt.objects.filter(pk=third.pk).update(published_at=stale)
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_expired_leases().republished == 0
