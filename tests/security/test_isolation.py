"""Every URL of the project tried with every method (GET, POST, PUT, PATCH, DELETE) against
alice's objects (team Acme), by three outsiders: charlie (team Globex) signed in, charlie's API
token (with his runner's credential on the runner API), and an anonymous client.

A URL that names one of alice's objects must answer 403 or 404 (405 where the method does not
exist; 401 without a credential that fits, and a redirect to the login page for a page asked
without a session). Every other URL may answer, but never with a 5xx or with any of alice's
marker texts. Afterwards every one of alice's objects must be exactly as it was. The catalog
is global, so its pages and API may answer charlie, for reads only: the catalog rows must be
unchanged afterwards too (its writes are staff-only, 403).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.shortcuts import resolve_url
from django.test import Client
from django.utils.http import urlencode

from apps.accounts.services import api_token_create
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from tests.benchmarks.factories import enrolled_runner, result_document, simulated_probe
from tests.decisions.factories import make_approver
from tests.security.alice_world import MARKERS, AliceWorld, build_alice_world
from tests.security.url_walk import Endpoint, endpoints, resolves_to

DENIED = {403, 404}
NO_SUCH_METHOD = 405
NOT_AUTHENTICATED = 401
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
WRITES = {"POST", "PUT", "PATCH"}
PRINCIPALS = ("session", "token", "anonymous")
RUNNER_API = "runner-api:"
ADMIN = "admin:"
# Parameterless POSTs whose probe body names alice's selection or attempt.
BODY_TARGETS = {"decision-list", "benchmark-plan-list", f"{RUNNER_API}heartbeat"}

# URL names whose `pk` / `slug` / `key` means an object of the world (alice's, or the catalog's).
OBJECT_OF_ROUTE: dict[str, str] = {
    "audit-event-detail": "audit_event",
    "selection-": "selection",
    "runner-detail": "runner",
    "benchmark-plan-": "plan",
    "benchmark-job-": "job",
    "decision-": "record",
    "catalog-release-detail": "catalog:release",
    "catalog:release": "catalog:release",
    "catalog:copy-forward": "catalog:release",
    "catalog-capability-detail": "catalog:cell",
    "catalog:capability": "catalog:cell",
    "catalog-engine-detail": "catalog:engine",
    "catalog:engine": "catalog:engine",
    "catalog-backend-detail": "catalog:backend",
    "catalog-accelerator-detail": "catalog:accelerator",
    "catalog:accelerator": "catalog:accelerator",
    "catalog-model-detail": "catalog:model",
    "catalog:model": "catalog:model",
    "catalog-feature-detail": "catalog:feature",
    "catalog:feature": "catalog:feature",
}
# Parameters that mean the same object wherever they appear.
OBJECT_OF_PARAM: dict[str, str] = {
    "selection_id": "selection",
    "plan_id": "plan",
    "job_id": "job",
    "attempt_id": "attempt",
    "runner_id": "runner",
    "record_id": "record",
    "trigger_id": "trigger",
    "token_id": "api_token",
    "membership_id": "membership",
    "invitation_id": "invitation",
    # The admin site is staff-only, so charlie must meet its login whatever the object.
    "object_id": "selection",
    "id": "selection",
}
# Parameters that are not objects: a fixed value that reaches the pattern.
CONSTANT_OF_PARAM: dict[str, str] = {
    "format": "json",
    "file_format": "json",
    "kind": "releases",
    "app_label": "selections",
    "url": "no-such-admin-page/",
    # An invitation link is a bearer secret: a made-up one must lead nowhere.
    "token": "ssi_00000000_not-a-real-invitation",
}


def _object_key(endpoint: Endpoint, param: str) -> str | None:
    if param in ("pk", "slug", "key"):
        name = endpoint.name
        return next((key for route, key in OBJECT_OF_ROUTE.items() if name.startswith(route)), None)
    if param == "ident":
        return "catalog:release"
    return OBJECT_OF_PARAM.get(param)


def value_filler(world: AliceWorld, unfilled: list[str]) -> Callable[[Endpoint, str], str]:
    def value_of(endpoint: Endpoint, param: str) -> str:
        if param in CONSTANT_OF_PARAM:
            return CONSTANT_OF_PARAM[param]
        if param == "content_type_id":
            return str(ContentType.objects.get_for_model(world.objects["selection"]).pk)
        key = _object_key(endpoint, param)
        if key is None:
            unfilled.append(f"{endpoint.name} {endpoint.route} <{param}>")
            return "0"
        if key.startswith("catalog:"):
            return world.catalog_ids()[key.removeprefix("catalog:")]
        return str(world.objects[key].pk)

    return value_of


def probe_body(world: AliceWorld, acme: Any) -> dict[str, Any]:
    """One body for every POST: valid for the write endpoints, naming alice's objects."""
    ids = {name: obj.pk for name, obj in world.objects.items()}
    return {
        "selection": ids["selection"],
        "selection_id": ids["selection"],
        "candidate": ids["candidate"],
        "candidates": [ids["candidate"]],
        "chosen": [ids["candidate"]],
        "chosen_candidate": ids["candidate"],
        "record": ids["record"],
        "plan": ids["plan"],
        "attempt_id": ids["attempt"],
        "runner": ids["runner"],
        "trace": ids["trace"],
        "team": acme.pk,
        "team_id": acme.pk,
        "username": "charlie",
        "role": "viewer",
        "reason": "isolation probe",
        "title": "isolation probe",
        "name": "isolation probe",
        "offset": 0,
        "text": "probe",
        "state": "failed",
        "load_point": 0,
        "done": 1,
        "total": 1,
        "message": "probe",
    }


def query_of(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if not isinstance(v, list | dict)}


class Prober:
    """Sends each request as one outsider. `session`: charlie signed in (pages and /api/v1/),
    his runner on the runner API; `token`: charlie's API token everywhere but the runner API,
    where his runner's credential goes; `anonymous`: no credential at all."""

    def __init__(self, principal: str, charlie: Any, credentials: dict[str, str], body: dict):
        self.principal = principal
        self.charlie = charlie
        self.body = body
        self.pages = Client(raise_request_exception=False)
        if principal == "session":
            self.pages.force_login(charlie)
        elif principal == "token":
            self.pages.defaults["HTTP_AUTHORIZATION"] = f"Token {credentials['token']}"
        self.runner = Client(raise_request_exception=False)
        if principal != "anonymous":
            self.runner.defaults["HTTP_AUTHORIZATION"] = f"Runner {credentials['runner']}"

    def send(self, endpoint: Endpoint, method: str, path: str):
        if endpoint.name.startswith(RUNNER_API):
            response = self._runner_call(endpoint, method, path)
        elif method == "GET":
            response = self.pages.get(path, query_of(self.body) if "?" not in path else None)
        elif method == "DELETE":
            response = self.pages.delete(path)
        elif path.startswith("/api/"):
            payload = json.dumps(self.body)
            response = self.pages.generic(method, path, payload, content_type="application/json")
        else:
            form = urlencode(query_of(self.body))
            response = self.pages.generic(
                method, path, form, content_type="application/x-www-form-urlencoded"
            )
        if self.principal == "session" and "_auth_user_id" not in self.pages.session:
            self.pages.force_login(self.charlie)  # a logout URL ended the session
        return response

    def _runner_call(self, endpoint: Endpoint, method: str, path: str):
        if method in ("GET", "DELETE"):
            return self.runner.generic(method, path)
        if endpoint.name == f"{RUNNER_API}results":
            body = gzip.compress(json.dumps(result_document(0)).encode())
            headers = {"HTTP_CONTENT_ENCODING": "gzip", "HTTP_IDEMPOTENCY_KEY": "isolation"}
            return self.runner.generic(
                method, path, body, content_type="application/json", **headers
            )
        payload = {**self.body, "probe": simulated_probe(), "token": "not-a-token"}
        return self.runner.generic(
            method, path, json.dumps(payload), content_type="application/json"
        )


def targets_alice(endpoint: Endpoint, method: str) -> bool:
    """The URL (or, for BODY_TARGETS, the probe body) names one of alice's objects."""
    if method in WRITES and endpoint.name in BODY_TARGETS:
        return True
    keys = [_object_key(endpoint, p) for p in endpoint.params if p not in CONSTANT_OF_PARAM]
    return any(key is not None and not key.startswith("catalog:") for key in keys)


def _refuses_only_the_probe_query(response: Any) -> bool:
    """A 400 of the strict query check (apps/core/query.py) for parameters the operation does
    not take: decided before any lookup, the same for every id."""
    try:
        errors = response.json()
    except ValueError:
        return False
    return bool(errors) and all(
        isinstance(messages, list) and messages[0].startswith("Not a parameter")
        for messages in errors.values()
    )


def verdict(principal: str, endpoint: Endpoint, method: str, response: Any) -> str | None:
    """Why this answer breaks isolation, or None when it is fine."""
    status = response.status_code
    body = b"" if response.streaming else response.content
    text = body.decode("utf-8", "replace")
    leaked = [name for name, marker in MARKERS.items() if marker in text]
    if status >= 500:
        return f"server error {status}"
    if leaked:
        return f"{status} shows alice's {', '.join(leaked)}"
    location = response.get("Location", "")
    if endpoint.name.startswith(ADMIN) and endpoint.params:
        return None if status == 302 and location.startswith("/admin/login/") else f"{status}"
    if not targets_alice(endpoint, method):
        return None
    allowed = DENIED | {NO_SUCH_METHOD}
    api = endpoint.name.startswith(RUNNER_API) or endpoint.route.startswith("api/")
    if endpoint.name.startswith(RUNNER_API) or principal != "session":
        allowed |= {NOT_AUTHENTICATED}
    if status == 400 and method == "GET" and api and _refuses_only_the_probe_query(response):
        return None  # the walk's query string refused before any lookup: says nothing of hers
    if status == 302 and principal != "session" and not api:
        return (
            None if location.startswith(resolve_url(settings.LOGIN_URL)) else f"302 to {location}"
        )
    return None if status in allowed else f"{status} (wanted one of {sorted(allowed)})"


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_no_outsider_reaches_alices_objects_through_any_url_or_method(
    principal, alice, bob, acme, charlie, globex
):
    world = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    _, runner_credential = enrolled_runner(charlie, globex, name="globex-sim")
    _, token = api_token_create(actor=Actor.for_user(charlie), user=charlie, team=globex, name="x")
    credentials = {"runner": runner_credential, "token": token}
    before = world.snapshot()
    acme_events = AuditEvent.objects.filter(team=acme).count()
    prober = Prober(principal, charlie, credentials, probe_body(world, acme))
    unfilled: list[str] = []
    value_of = value_filler(world, unfilled)
    checked: list[str] = []
    failures: list[str] = []
    for endpoint in endpoints():
        path = endpoint.path(value_of)
        if not resolves_to(endpoint, path):
            failures.append(f"{path} does not resolve to {endpoint.route}")
            continue
        for method in METHODS:
            response = prober.send(endpoint, method, path)
            checked.append(f"{method} {path} -> {response.status_code}")
            problem = verdict(principal, endpoint, method, response)
            if problem:
                failures.append(f"{method} {path} [{endpoint.name}]: {problem}")
    after = world.snapshot()
    changed = [name for name in before if before[name] != after[name]]
    if changed:
        failures.append(f"alice's objects changed: {changed}")
    if AuditEvent.objects.filter(team=acme).count() != acme_events:
        failures.append(f"{principal} requests wrote audit events of Acme")
    assert not unfilled, "URL parameters the walk cannot fill (add them to the maps):\n" + (
        "\n".join(unfilled)
    )
    assert not failures, "\n".join(["FAILURES:", *failures, "", "CHECKED:", *checked])
