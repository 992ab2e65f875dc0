"""Trace replay as an arrival process: validation against the team, the simulator, the plan."""

from __future__ import annotations

import pytest
from stackselect_domain.workload import Workload, generate_requests

from apps.selections import services
from apps.selections.candidates.goal import goal_from_documents, open_loop_workload
from apps.selections.models import Selection
from apps.selections.replay import resolved_workload
from apps.selections.tasks import compute_candidates
from tests.selections.helpers import create_selection
from tests.selections.test_pages import FORM
from tests.selections.test_traces import CSV

pytestmark = pytest.mark.django_db
URL = "/api/v1/selections/"


def _trace_of(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    return services.trace_upload(
        actor_user=user, selection=selection, name="day.csv", content=CSV.encode(), apply=False
    )


def _replaying(payload, trace_id, **extra):
    payload["workload"]["arrival"] = {"process": "trace", "trace": trace_id, **extra}
    return payload


def test_alice_replays_her_teams_trace_and_the_speedup_defaults_to_one(
    catalog, alice, acme, alice_client, goal_payload
):
    trace = _trace_of(alice, acme, goal_payload)

    response = alice_client.post(
        URL, _replaying(goal_payload, trace.pk), content_type="application/json"
    )

    assert response.status_code == 201, response.json()
    arrival = response.json()["workload"]["arrival"]
    assert arrival == {"process": "trace", "trace": trace.pk, "speedup": 1.0}


def test_charlie_cannot_replay_alices_trace(catalog, alice, acme, charlie_client, goal_payload):
    trace = _trace_of(alice, acme, goal_payload)

    response = charlie_client.post(
        URL, _replaying(goal_payload, trace.pk), content_type="application/json"
    )

    assert response.status_code == 400
    assert "no trace" in response.json()["workload"]["arrival"]["trace"][0]
    assert not Selection.objects.filter(team__slug="globex").exists()


def test_a_replayed_trace_takes_no_rate_and_a_trace_id_needs_the_trace_process(
    catalog, alice, acme, alice_client, goal_payload
):
    trace = _trace_of(alice, acme, goal_payload)
    with_rate = _replaying(goal_payload, trace.pk, rate_rps=3)
    response = alice_client.post(URL, with_rate, content_type="application/json")
    assert "rate_rps" in response.json()["workload"]["arrival"]

    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 2, "trace": trace.pk}
    response = alice_client.post(URL, goal_payload, content_type="application/json")
    assert "trace" in response.json()["workload"]["arrival"]


def test_the_simulator_gets_the_traces_timestamps_and_each_requests_own_lengths(
    catalog, alice, acme, goal_payload
):
    trace = _trace_of(alice, acme, goal_payload)
    selection = create_selection(
        user=alice, team=acme, payload=_replaying(goal_payload, trace.pk, speedup=2.0)
    )

    document = resolved_workload(selection.workload, team=acme)
    goal = goal_from_documents(
        model=selection.model,
        workload=document,
        slo=selection.slo,
        constraints=selection.constraints,
    )

    requests = generate_requests(goal.workload, 5, seed=0)
    # CSV: a request every 2 s with 100..500 input and 10..50 output tokens; twice as fast.
    assert [r.arrival_s for r in requests] == pytest.approx([0, 1, 2, 3, 4])
    assert [r.input_tokens for r in requests] == [100, 200, 300, 400, 500]
    assert [r.output_tokens for r in requests] == [10, 20, 30, 40, 50]
    assert goal.target_rate_rps == pytest.approx(1.0)  # 0.5 req/s replayed at x2
    assert goal.isl == 300


def test_the_benchmark_schedule_replays_the_trace_at_unit_rate(catalog, alice, acme, goal_payload):
    trace = _trace_of(alice, acme, goal_payload)
    selection = create_selection(user=alice, team=acme, payload=_replaying(goal_payload, trace.pk))

    # What apps/benchmarks does with the resolved document (see replay.py).
    workload = open_loop_workload(
        Workload.from_dict(resolved_workload(selection.workload, team=acme))
    )
    schedule = generate_requests(workload, 5, 7, rate_rps=1.0)

    assert [r.arrival_s for r in schedule] == pytest.approx([0, 1, 2, 3, 4])
    assert [r.input_tokens for r in schedule] == [100, 200, 300, 400, 500]


def test_a_trace_of_another_team_does_not_resolve_even_if_stored_in_a_workload(
    catalog, alice, acme, charlie, globex, goal_payload
):
    trace = _trace_of(alice, acme, goal_payload)
    workload = _replaying(goal_payload, trace.pk)["workload"]

    with pytest.raises(ValueError, match=r"arrival\.trace"):
        resolved_workload(workload, team=globex)


def test_candidates_are_computed_for_a_replayed_trace(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    trace = _trace_of(alice, acme, goal_payload)
    selection = create_selection(user=alice, team=acme, payload=_replaying(goal_payload, trace.pk))
    services.candidates_request(actor_user=alice, selection=selection)

    assert compute_candidates(selection.pk) == "done"

    leader = selection.candidates.get(rank=1)
    assert leader.estimate["goodput_per_gpu_rps"] > 0


def test_an_upload_can_apply_the_trace_as_a_replay_instead_of_a_gamma_process(
    catalog, alice, acme, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    trace = services.trace_upload(
        actor_user=alice, selection=selection, name="d.csv", content=CSV.encode(), replay=True
    )

    selection.refresh_from_db()
    assert selection.workload["arrival"] == {"process": "trace", "trace": trace.pk, "speedup": 1.0}


def test_the_goal_form_offers_only_the_teams_traces_for_replay(
    catalog, alice, acme, alice_client, charlie_client, goal_payload
):
    trace = _trace_of(alice, acme, goal_payload)
    form = {**FORM, "arrival": "trace", "rate_rps": "", "trace": str(trace.pk), "speedup": "3"}

    assert alice_client.post("/selections/new/", form).status_code == 302
    stored = Selection.objects.get(title=FORM["title"])
    assert stored.workload["arrival"] == {"process": "trace", "trace": trace.pk, "speedup": 3.0}

    response = charlie_client.post("/selections/new/", form)
    assert "trace" in response.context["form"].errors
    assert not Selection.objects.filter(team__slug="globex").exists()
