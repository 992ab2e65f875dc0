import base64
import json

import pytest
import redis
from django.conf import settings

from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import enrolled_runner, selection_with_candidates

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker():
    connection = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    yield connection
    connection.close()


DRY_RUN = PlanOptions(run_mode="simulated")


def test_dispatch_puts_a_real_message_on_the_pool_queue_in_redis(
    alice, acme, selection, sim_runner, broker, django_capture_on_commit_callbacks
):
    queue = f"pool.{acme.pk}.h100-sxm.1.simulated"
    broker.delete(queue)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            plan = plan_create(
                actor_user=alice, team=acme, selection_id=selection.pk, options=DRY_RUN
            )
        attempt = plan.jobs.get().attempts.get()
        assert attempt.queue == queue
        messages = [json.loads(raw) for raw in broker.lrange(queue, 0, -1)]
        assert len(messages) == 1
        headers = messages[0]["headers"]
        assert headers["task"] == "stackselect.runner.run_attempt"
        args, kwargs, _ = json.loads(base64.b64decode(messages[0]["body"]))
        assert (args, kwargs) == ([], {"attempt_id": attempt.pk, "gpu_count": 1})
        attempt.refresh_from_db()
        assert attempt.published_at is not None
    finally:
        broker.delete(queue)


def test_nothing_is_sent_when_the_transaction_rolls_back(alice, acme, selection, broker):
    queue = f"pool.{acme.pk}.h100-sxm.1.vllm.v0.8.model-llama-3.1-8b"
    broker.delete(queue)
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions()
    )
    assert plan.jobs.get().attempts.get().queue == queue
    # The test transaction never commits, so on_commit never fires.
    assert broker.llen(queue) == 0


def test_a_job_no_runner_can_take_says_which_hardware_is_missing(alice, acme, rows, alice_client):
    selection = selection_with_candidates(acme, alice, rows, layouts=[("l40s", 2, "bf16")])
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions()
    )
    job = plan.jobs.get()
    assert job.state == "waiting_for_runner"
    assert "2 x NVIDIA L40S (l40s)" in job.state_reason
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert "2 x NVIDIA L40S (l40s)" in page
    progress = alice_client.get(f"/benchmarks/{plan.pk}/progress.json").json()
    assert progress["jobs"][0]["state"] == "waiting_for_runner"


def test_a_runner_too_small_for_the_job_does_not_count(alice, acme, rows):
    enrolled_runner(alice, acme, name="one-l40s", accelerator="l40s", gpu_count=1)
    selection = selection_with_candidates(acme, alice, rows, layouts=[("l40s", 2, "bf16")])
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=DRY_RUN)
    job = plan.jobs.get()
    assert job.state == "waiting_for_runner"
    assert "one-l40s takes jobs of 1 GPU(s), not 2" in job.state_reason


def test_enrolling_a_fitting_runner_queues_the_waiting_job(alice, acme, rows, client):
    selection = selection_with_candidates(acme, alice, rows, layouts=[("l40s", 2, "bf16")])
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=DRY_RUN)
    from apps.runners.services import enrollment_token_create
    from tests.benchmarks.factories import simulated_probe

    _, token = enrollment_token_create(actor_user=alice, team=acme)
    response = client.post(
        "/api/runner/v1/enroll",
        data={"token": token, "name": "big", "probe": simulated_probe("l40s", gpu_count=4)},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert f"pool.{acme.pk}.l40s.2.simulated" in response.json()["queues"]
    job = plan.jobs.get()
    assert job.state == "queued"
    assert "on the runners that have it: big." in job.state_reason
