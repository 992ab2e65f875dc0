"""Charlie (Globex) names alice's objects (Acme) inside his own requests' bodies: a trace to
replay in his goal, her selection for his plan or decision, her candidates in his choice, his
decision and his evidence import, her attempt in his runner's heartbeat.

Each is refused (400 or 404) exactly as the same request naming an id that never existed is:
same status, same body but for the id, so the answer does not tell that alice's object exists.
None of alice's objects changes, and none of charlie's ends up pointing at hers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from apps.accounts.services import api_token_create
from apps.audit.services import Actor
from apps.benchmarks.models import BenchmarkPlan
from apps.decisions.models import DecisionRecord
from apps.selections.models import Candidate, Selection, WorkloadTrace
from tests.benchmarks.factories import WORKLOAD, enrolled_runner, selection_with_candidates
from tests.decisions.factories import draft, make_approver
from tests.security.alice_world import MARKERS, build_alice_world

NEVER = 10**9  # far past any id a test database hands out


@pytest.fixture
def worlds(alice, bob, acme, charlie, globex) -> dict[str, Any]:
    world = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    own = selection_with_candidates(
        globex, charlie, world.catalog, layouts=[("h100-sxm", 1, "bf16"), ("l40s", 1, "bf16")]
    )
    _, token = api_token_create(actor=Actor.for_user(charlie), user=charlie, team=globex, name="x")
    _, credential = enrolled_runner(charlie, globex, name="globex-sim")
    return {
        "alice": world,
        "ids": {name: obj.pk for name, obj in world.objects.items()},
        "own_selection": own,
        "own_record": draft(charlie, globex, own),
        "api": Client(HTTP_AUTHORIZATION=f"Token {token}"),
        "runner": Client(HTTP_AUTHORIZATION=f"Runner {credential}"),
    }


def _json(client: Client, method: str, path: str, body: Any):
    return client.generic(method, path, json.dumps(body), content_type="application/json")


def _goal(trace_id: int) -> dict[str, Any]:
    workload = {**WORKLOAD, "model": "llama-3.1-8b", "precision": ["bf16"]}
    workload["arrival"] = {"process": "trace", "trace": trace_id}
    return {"title": "charlie's goal", "workload": workload, "slo": {"ttft_ms": 500}}


def _record(selection_id: int, **extra: Any) -> dict[str, Any]:
    return {"title": "charlie's record", "selection": selection_id, **extra}


# name -> (the object of alice's it names, request(worlds, id) -> response)
Request = Callable[[dict[str, Any], int], Any]
REFERENCES: dict[str, tuple[str, Request]] = {
    "a new goal replays her trace": (
        "trace",
        lambda w, i: _json(w["api"], "POST", "/api/v1/selections/", _goal(i)),
    ),
    "his goal, replaced, replays her trace": (
        "trace",
        lambda w, i: _json(
            w["api"], "PUT", f"/api/v1/selections/{w['own_selection'].pk}/", _goal(i)
        ),
    ),
    "his choice names her candidate": (
        "candidate",
        lambda w, i: _json(
            w["api"],
            "POST",
            f"/api/v1/selections/{w['own_selection'].pk}/candidates/choose/",
            {"chosen": [i]},
        ),
    ),
    "his plan is of her selection": (
        "selection",
        lambda w, i: _json(
            w["api"], "POST", "/api/v1/benchmarks/plans/", {"selection": i, "title": "x"}
        ),
    ),
    "his decision is about her selection": (
        "selection",
        lambda w, i: _json(w["api"], "POST", "/api/v1/decisions/", _record(i)),
    ),
    "his decision compares her candidate": (
        "candidate",
        lambda w, i: _json(
            w["api"], "POST", "/api/v1/decisions/", _record(w["own_selection"].pk, candidates=[i])
        ),
    ),
    "his decision chooses her candidate": (
        "candidate",
        lambda w, i: _json(
            w["api"],
            "POST",
            "/api/v1/decisions/",
            _record(w["own_selection"].pk, chosen_candidate_id=i),
        ),
    ),
    "his draft, edited, chooses her candidate": (
        "candidate",
        lambda w, i: _json(
            w["api"],
            "PUT",
            f"/api/v1/decisions/{w['own_record'].pk}/",
            {"title": "edited", "chosen_candidate_id": i},
        ),
    ),
    "his draft, edited, drops her candidate with a reason": (
        "candidate",
        lambda w, i: _json(
            w["api"],
            "PUT",
            f"/api/v1/decisions/{w['own_record'].pk}/",
            {"title": "edited", "dropped": {str(i): "probe"}},
        ),
    ),
    "his evidence import is for her selection": (
        "selection",
        lambda w, i: w["api"].post(
            "/api/v1/evidence/imports/", {"selection": i, "tool": "vllm", "result": _vllm_file()}
        ),
    ),
    "his evidence import is for her candidate": (
        "candidate",
        lambda w, i: w["api"].post(
            "/api/v1/evidence/imports/",
            {
                "selection": w["own_selection"].pk,
                "candidate": i,
                "tool": "vllm",
                "result": _vllm_file(),
            },
        ),
    ),
    "his runner beats for her attempt": (
        "attempt",
        lambda w, i: _json(w["runner"], "POST", "/api/runner/v1/heartbeat", {"attempt_id": i}),
    ),
    "his runner beats for her attempt among several": (
        "attempt",
        lambda w, i: _json(
            w["runner"], "POST", "/api/runner/v1/heartbeat", {"attempts": [{"attempt_id": i}]}
        ),
    ),
}


def _vllm_file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("result.json", b"{}", content_type="application/json")


def _text(response: Any, object_id: int) -> str:
    return response.content.decode("utf-8", "replace").replace(str(object_id), "<id>")


def _charlies_rows_naming(worlds: dict[str, Any]) -> list[str]:
    """Charlie's rows that hold one of alice's ids where his own should be."""
    ids, team, found = worlds["ids"], worlds["own_selection"].team, []
    for selection in Selection.objects.filter(team=team):
        if (selection.workload.get("arrival") or {}).get("trace") == ids["trace"]:
            found.append(f"selection {selection.pk} replays her trace")
    for record in DecisionRecord.objects.filter(team=team):
        if record.selection_id == ids["selection"]:
            found.append(f"record {record.pk} is about her selection")
        if ids["candidate"] in [row.get("candidate_id") for row in record.candidates]:
            found.append(f"record {record.pk} holds her candidate")
    if BenchmarkPlan.objects.filter(team=team, selection_id=ids["selection"]).exists():
        found.append("a plan of his is of her selection")
    if Candidate.objects.filter(selection__team=team, pk=ids["candidate"]).exists():
        found.append("her candidate moved to his team")
    return found


@pytest.mark.parametrize("reference", sorted(REFERENCES))
def test_naming_another_teams_object_is_refused_like_a_missing_one(worlds, reference):
    target, request = REFERENCES[reference]
    alice_id = worlds["ids"][target]
    before = worlds["alice"].snapshot()
    traces = WorkloadTrace.objects.count()
    hers = request(worlds, alice_id)
    missing = request(worlds, NEVER)
    assert hers.status_code in (400, 404), (hers.status_code, hers.content[:300])
    assert (hers.status_code, _text(hers, alice_id)) == (missing.status_code, _text(missing, NEVER))
    leaked = [name for name, marker in MARKERS.items() if marker in _text(hers, alice_id)]
    assert not leaked, leaked
    assert worlds["alice"].snapshot() == before
    assert WorkloadTrace.objects.count() == traces
    assert not _charlies_rows_naming(worlds)
