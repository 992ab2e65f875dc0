"""API throttling on real requests: rates per principal with Retry-After, and an address
that presented too many refused credentials is refused before its next one is checked."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from apps.accounts.services import api_token_create
from apps.audit.services import Actor
from tests.benchmarks.factories import RunnerClient, catalog, enrolled_runner

ENROLL = "/api/runner/v1/enroll"


@pytest.fixture
def throttling(settings):
    settings.API_THROTTLE_ENABLED = True
    settings.API_THROTTLE_RATES = {
        "user": "3/min",
        "anon": "3/min",
        "runner": "3/min",
        "enroll": "3/hour",
    }
    settings.API_AUTH_FAILURE_LIMIT = 4
    cache.clear()
    yield settings
    cache.clear()


def _token(user, team, name="t") -> str:
    return api_token_create(actor=Actor.for_user(user), user=user, team=team, name=name)[1]


def _enroll(client: Client, address: str = "10.0.0.1"):
    body = {"token": "not-a-token", "name": "guess", "probe": {"hostname": "h"}}
    return client.post(ENROLL, body, content_type="application/json", REMOTE_ADDR=address)


def test_enrollment_attempts_per_address_end_in_429_with_retry_after(throttling, db, client):
    assert [_enroll(client).status_code for _ in range(3)] == [403, 403, 403]
    refused = _enroll(client)
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert _enroll(client, address="10.0.0.2").status_code == 403


def test_an_address_with_too_many_refused_tokens_is_refused_even_the_right_one(
    throttling, alice, acme, client
):
    token = _token(alice, acme)
    wrong = {"HTTP_AUTHORIZATION": "Token wrong-guess", "REMOTE_ADDR": "10.0.0.7"}
    assert [client.get("/api/v1/selections/", **wrong).status_code for _ in range(4)] == [401] * 4
    right = {"HTTP_AUTHORIZATION": f"Token {token}"}
    locked = client.get("/api/v1/selections/", REMOTE_ADDR="10.0.0.7", **right)
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert "refused credentials" in locked.json()["detail"]
    assert client.get("/api/v1/selections/", REMOTE_ADDR="10.0.0.8", **right).status_code == 200


def test_refused_runner_credentials_count_like_tokens(throttling, db, client):
    wrong = {"HTTP_AUTHORIZATION": "Runner guessed", "REMOTE_ADDR": "10.0.0.9"}
    answers = [
        client.post("/api/runner/v1/heartbeat", {}, content_type="application/json", **wrong)
        for _ in range(5)
    ]
    assert [a.status_code for a in answers] == [401, 401, 401, 401, 429]


def test_a_person_is_throttled_per_user_not_per_address(throttling, alice, bob, acme, client):
    alice_auth = {"HTTP_AUTHORIZATION": f"Token {_token(alice, acme)}"}
    codes = [
        client.get("/api/v1/selections/", REMOTE_ADDR=f"10.1.0.{n}", **alice_auth).status_code
        for n in range(4)
    ]
    assert codes == [200, 200, 200, 429]
    bob_auth = {"HTTP_AUTHORIZATION": f"Token {_token(bob, acme, 'b')}"}
    assert client.get("/api/v1/selections/", **bob_auth).status_code == 200


def test_a_runner_is_throttled_per_runner(throttling, alice, acme):
    catalog()
    _, first = enrolled_runner(alice, acme, name="r1")
    _, second = enrolled_runner(alice, acme, name="r2")
    one, other = RunnerClient(first), RunnerClient(second)
    assert [one.post("heartbeat").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert other.post("heartbeat").status_code == 200


def test_throttling_is_off_when_disabled(settings, alice, acme, client):
    settings.API_THROTTLE_RATES = {"user": "1/min"}
    auth = {"HTTP_AUTHORIZATION": f"Token {_token(alice, acme)}"}
    assert {client.get("/api/v1/selections/", **auth).status_code for _ in range(3)} == {200}
