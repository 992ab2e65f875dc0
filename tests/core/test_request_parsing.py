"""Every JSON operation of the API, taken from the OpenAPI schema so a new one is covered too,
refuses deep nesting, NUL characters, non-finite and out-of-range numbers and malformed bodies
with a 400 in the API's error format ({detail, code}), never a 500 or an HTML page."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

import pytest
from django.test import Client, override_settings
from drf_spectacular.generators import SchemaGenerator

from apps.accounts.services import api_token_create
from apps.audit.services import Actor
from apps.core.parsers import JsonBodyError, check_shape, loads_bounded
from tests.decisions.factories import make_approver
from tests.security.alice_world import build_alice_world
from tests.security.test_api_fuzz import real_ids

RUNNER_API = "/api/runner/v1/"
BRACKETS = 2048  # the 2 KB of brackets that answered 500


def json_operations() -> list[tuple[str, str, bool]]:
    """(method, path template, sent gzip-compressed) of every operation with a JSON body."""
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    operations = []
    for template, methods in paths.items():
        for method, operation in methods.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" not in content:
                continue
            gzipped = any(p["name"] == "Content-Encoding" for p in operation.get("parameters", []))
            operations.append((method.upper(), template, gzipped))
    return operations


OPERATIONS = json_operations()
BAD_BODIES = {
    "deep arrays": (b"[" * BRACKETS + b"]" * BRACKETS, "body"),
    "deep objects": (b'{"a":' * BRACKETS + b"1" + b"}" * BRACKETS, "body"),
    "unclosed brackets": (b"[" * BRACKETS, "body"),
    "a NUL character": (b'{"title": "a\\u0000b"}', "title"),
    "a NUL in a key": (b'{"ti\\u0000tle": "x"}', "body"),
    "a NUL deep inside": (b'{"constraints": {"notes": ["ok", "\\u0000"]}}', "constraints.notes[1]"),
    "NaN": (b'{"duration_s": NaN}', "body"),
    "an overflowing number": (b'{"rate_rps": 1e999}', "rate_rps"),
    "an integer beyond 64 bits": (b'{"page": 99999999999999999999}', "page"),
    "bytes that are not UTF-8": (b'{"title": "\xff\xfe"}', "body"),
    "truncated JSON": (b'{"title": ', "body"),
}


@pytest.fixture
def world(db, alice, bob, acme) -> dict[str, Any]:
    built = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    alice.is_staff = True  # a curator too, so the catalog's writes read their bodies
    alice.save(update_fields=["is_staff"])
    _, token = api_token_create(actor=Actor.for_user(alice), user=alice, team=acme, name="parse")
    return {
        "ids": real_ids(built),
        "user": f"Token {token}",
        "runner": f"Runner {built.runner_credential}",
    }


def concrete(template: str, ids: dict[str, str]) -> str:
    """The template with alice's real object ids (else 1), so the body reaches the parser."""
    for prefix, value in sorted(ids.items(), key=lambda item: -len(item[0])):
        if template.startswith(prefix):
            template = prefix.rsplit("{", 1)[0] + value + template[len(prefix) :]
            break
    return re.sub(r"\{[^}]+\}", "1", template)


def send(world: dict[str, Any], method: str, template: str, gzipped: bool, body: bytes):
    auth = world["runner"] if template.startswith(RUNNER_API) else world["user"]
    headers = {"HTTP_AUTHORIZATION": auth}
    if gzipped:
        body = gzip.compress(body)
        headers.update(HTTP_CONTENT_ENCODING="gzip", HTTP_IDEMPOTENCY_KEY="parse-test")
    return Client().generic(
        method, concrete(template, world["ids"]), body, content_type="application/json", **headers
    )


def test_the_schema_lists_the_json_operations_of_both_apis():
    paths = {template for _, template, _ in OPERATIONS}
    assert f"{RUNNER_API}enroll" in paths
    assert f"{RUNNER_API}attempts/{{attempt_id}}/results" in paths
    assert "/api/v1/selections/" in paths
    assert len(OPERATIONS) >= 15


@pytest.mark.parametrize(("method", "template", "gzipped"), OPERATIONS)
def test_every_json_operation_refuses_bad_bodies_with_a_json_400(world, method, template, gzipped):
    wrong = {}
    for bad, (body, field) in BAD_BODIES.items():
        response = send(world, method, template, gzipped, body)
        if response.status_code != 400 or response["Content-Type"] != "application/json":
            wrong[bad] = (response.status_code, response.content[:200])
            continue
        answer = response.json()
        named = answer.get("detail", "").startswith(f"{field}:")
        coded = gzipped or (answer.get("code"), answer.get("field")) == ("invalid_body", field)
        if not (named and coded and "code" in answer):
            wrong[bad] = answer
    assert not wrong, wrong


def test_a_16_mb_anonymous_enroll_body_is_refused_unread_with_a_413(db, client):
    body = b"[" + b"[]," * (16 * 1024 * 1024 // 3) + b"[]]"
    response = client.post("/api/runner/v1/enroll", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"


def test_each_endpoint_has_its_own_body_limit(db, client):
    big = json.dumps({"token": "x", "name": "n", "probe": {"hostname": "h" * 4096}})
    small = json.dumps({"token": "x", "name": "n", "probe": {"hostname": "h"}})
    with override_settings(API_BODY_LIMITS={"runner-api:enroll": 2048}):
        refused = client.post("/api/runner/v1/enroll", big, content_type="application/json")
        read = client.post("/api/runner/v1/enroll", small, content_type="application/json")
    assert (refused.status_code, refused.json()["code"]) == (413, "too_large")
    assert read.status_code == 403  # parsed, then the unknown token is refused


def test_the_depth_check_counts_levels_exactly():
    check_shape(b"[" * 32 + b"]" * 32, max_depth=32)
    with pytest.raises(JsonBodyError, match="deeper than 32"):
        check_shape(b"[" * 33 + b"]" * 33, max_depth=32)
    # Brackets inside strings are text, not nesting.
    check_shape(b'["' + b"[" * 100 + b'"]', max_depth=2)
    check_shape(b'["\\"[[[[", {"a": [[]]}]', max_depth=4)


def test_the_container_bound_refuses_a_body_of_empty_arrays():
    with pytest.raises(JsonBodyError, match="more than 10 objects and arrays"):
        loads_bounded(b"[" + b"[]," * 10 + b"[]]", max_containers=10)
    assert loads_bounded(b"[[], []]", max_containers=3) == [[], []]


def test_values_a_column_can_hold_pass_unchanged():
    document = {"a": [1, -(2**63), 2**63 - 1, 1.5, "é\t", None, True], "b": {"c": ""}}
    assert loads_bounded(json.dumps(document).encode()) == document
