"""Candidates computed in the background: queueing, the task, its status, and team isolation.

No Celery worker runs in these tests: the on-commit send is captured, and the task function is
called directly where the worker would run it.
"""

from __future__ import annotations

import pytest

from apps.selections import services
from apps.selections.choices import ComputeState, SelectionState
from apps.selections.models import WorkloadTrace
from apps.selections.tasks import compute_candidates
from tests.selections.helpers import create_selection, update_selection
from tests.selections.test_traces import CSV

pytestmark = pytest.mark.django_db
URL = "/api/v1/selections/"


@pytest.fixture
def small_goal(goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    return goal_payload


@pytest.fixture
def sent(monkeypatch):
    """Tasks sent to the broker, by name and kwargs."""
    messages = []
    monkeypatch.setattr(
        services.celery_app, "send_task", lambda name, **options: messages.append((name, options))
    )
    return messages


def test_the_api_answers_202_and_sends_the_task_only_on_commit(
    catalog, alice, acme, alice_client, small_goal, sent, django_capture_on_commit_callbacks
):
    selection = create_selection(user=alice, team=acme, payload=small_goal)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = alice_client.post(f"{URL}{selection.pk}/candidates/compute/")
        assert sent == []

    assert response.status_code == 202
    body = response.json()
    assert body["computation"] == "queued" and body["kept_count"] is None
    assert body["status_url"] == f"{URL}{selection.pk}/candidates/status/"
    assert len(callbacks) == 1
    assert sent == [("selections.compute_candidates", {"kwargs": {"selection_id": selection.pk}})]


def test_the_task_computes_the_candidates_and_the_status_then_counts_them(
    catalog, alice, acme, alice_client, small_goal
):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    services.candidates_request(actor_user=alice, selection=selection)

    assert compute_candidates(selection.pk) == "done"

    status = alice_client.get(f"{URL}{selection.pk}/candidates/status/").json()
    assert status["computation"] == "done" and status["state"] == "candidates_ready"
    assert status["kept_count"] == selection.candidates.filter(outcome="kept").count() > 0
    assert status["dropped_count"] == selection.candidates.filter(outcome="dropped").count() > 0


def test_running_the_task_twice_leaves_the_same_candidates(catalog, alice, acme, small_goal):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    services.candidates_request(actor_user=alice, selection=selection)
    compute_candidates(selection.pk)
    first = list(selection.candidates.values_list("pk", "rank"))

    assert compute_candidates(selection.pk) == "skipped"
    assert list(selection.candidates.values_list("pk", "rank")) == first


def test_a_goal_changed_after_queueing_is_not_computed(catalog, alice, acme, small_goal):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    services.candidates_request(actor_user=alice, selection=selection)
    small_goal["slo"]["ttft_ms"] = 500
    update_selection(user=alice, selection=selection, payload=small_goal)

    assert compute_candidates(selection.pk) == "skipped"
    assert not selection.candidates.exists()


def test_a_computation_that_outlives_its_goal_stores_nothing(catalog, alice, acme, small_goal):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    stale = type(selection).objects.get(pk=selection.pk)
    small_goal["slo"]["ttft_ms"] = 500
    update_selection(user=alice, selection=selection, payload=small_goal)

    services.candidates_compute(actor_user=alice, selection=stale)

    selection.refresh_from_db()
    assert not selection.candidates.exists()
    assert (selection.state, selection.computation) == (SelectionState.DRAFT, ComputeState.IDLE)


def test_a_failed_computation_records_why_and_the_page_shows_it(
    catalog, alice, acme, alice_client, small_goal
):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    trace = services.trace_upload(
        actor_user=alice, selection=selection, name="d.csv", content=CSV.encode(), replay=True
    )
    services.candidates_request(actor_user=alice, selection=selection)
    WorkloadTrace.objects.filter(pk=trace.pk).delete()  # the replayed trace is gone

    assert compute_candidates(selection.pk) == "failed"

    status = alice_client.get(f"/selections/{selection.pk}/candidates/status/").json()
    assert status["computation"] == "failed" and "arrival.trace" in status["error"]
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert "The last computation failed" in page and "arrival.trace" in page


def test_the_candidate_page_polls_while_the_computation_is_queued(
    catalog, alice, acme, alice_client, small_goal
):
    selection = create_selection(user=alice, team=acme, payload=small_goal)

    response = alice_client.post(f"/selections/{selection.pk}/candidates/compute/", follow=True)

    page = response.content.decode()
    assert 'data-computation="queued"' in page
    assert f'data-status-url="/selections/{selection.pk}/candidates/status/"' in page
    assert "js/computation_poll." in page  # the poller (static/js/computation_poll.js)
    compute_candidates(selection.pk)
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert 'id="computation"' not in page and "req/s per GPU" in page


def test_an_archived_selection_is_not_queued(catalog, alice, acme, alice_client, small_goal):
    selection = create_selection(user=alice, team=acme, payload=small_goal)
    services.selection_archive(actor_user=alice, selection=selection)

    response = alice_client.post(f"{URL}{selection.pk}/candidates/compute/")

    assert response.status_code == 400
    selection.refresh_from_db()
    assert selection.computation == ComputeState.IDLE


def test_charlie_can_neither_queue_nor_watch_alices_computation(
    catalog, alice, acme, charlie_client, small_goal, sent
):
    selection = create_selection(user=alice, team=acme, payload=small_goal)

    assert charlie_client.post(f"{URL}{selection.pk}/candidates/compute/").status_code == 404
    assert charlie_client.get(f"{URL}{selection.pk}/candidates/status/").status_code == 404
    page_status = f"/selections/{selection.pk}/candidates/status/"
    assert charlie_client.get(page_status).status_code == 404
    assert charlie_client.post(f"/selections/{selection.pk}/candidates/compute/").status_code == 404
    selection.refresh_from_db()
    assert selection.computation == ComputeState.IDLE and sent == []
