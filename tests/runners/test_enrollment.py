import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.runners.models import EnrollmentToken, Runner
from apps.runners.services import enrollment_token_create
from tests.benchmarks.factories import simulated_probe

ENROLL = "/api/runner/v1/enroll"


def _enroll(client, token, name="sim-1"):
    return client.post(
        ENROLL,
        data={"token": token, "name": name, "probe": simulated_probe()},
        content_type="application/json",
    )


def test_an_enrollment_token_enrolls_one_runner_and_is_refused_the_second_time(
    client, alice, acme, rows
):
    _, token = enrollment_token_create(actor_user=alice, team=acme)
    first = _enroll(client, token)
    assert first.status_code == 201, first.content
    body = first.json()
    runner = Runner.objects.get(pk=body["runner_id"])
    assert runner.team == acme
    assert runner.labels == {
        "accelerator": "h100-sxm",
        "gpu_count": 1,
        "engines": ["simulated"],
        "simulated": True,
        "models": [],
        "draft_models": {},
    }
    assert body["queues"] == [f"runner.{runner.pk}", f"pool.{acme.pk}.h100-sxm.1.simulated"]
    assert body["credential"].startswith(f"ssr_{runner.credential_prefix}_")
    assert {"broker_url", "heartbeat_interval_s", "lease_seconds"} <= set(body)

    second = _enroll(client, token, name="sim-2")
    assert second.status_code == 403
    assert Runner.objects.count() == 1


def test_an_expired_enrollment_token_is_refused(client, alice, acme, rows):
    token_row, token = enrollment_token_create(actor_user=alice, team=acme)
    EnrollmentToken.objects.filter(pk=token_row.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert _enroll(client, token).status_code == 403
    assert not Runner.objects.exists()


def test_a_made_up_token_is_refused(client, rows):
    assert _enroll(client, "sse_12345678_not-a-real-secret").status_code == 403


def test_the_credential_is_kept_only_as_a_digest_and_shown_once(client, alice, acme, rows):
    _, token = enrollment_token_create(actor_user=alice, team=acme)
    credential = _enroll(client, token).json()["credential"]
    runner = Runner.objects.get()
    assert runner.credential_digest == hashlib.sha256(credential.encode()).hexdigest()
    stored = [str(value) for value in Runner.objects.values().get().values()]
    stored += [str(e.before) + str(e.after) + e.message for e in AuditEvent.objects.all()]
    assert not any(credential in value or token in value for value in stored)


def test_a_second_active_runner_with_the_same_name_is_refused(client, alice, acme, rows):
    _, first = enrollment_token_create(actor_user=alice, team=acme)
    _, second = enrollment_token_create(actor_user=alice, team=acme)
    assert _enroll(client, first).status_code == 201
    response = _enroll(client, second)
    assert response.status_code == 400
    assert "name" in response.json()


def test_a_bad_probe_is_refused_naming_the_field_and_spends_no_token(client, alice, acme, rows):
    _, token = enrollment_token_create(actor_user=alice, team=acme)
    response = client.post(
        ENROLL,
        data={"token": token, "name": "x", "probe": {"gpus": "many"}},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "probe.gpus" in str(response.json())
    assert _enroll(client, token).status_code == 201


def test_only_a_team_admin_makes_enrollment_tokens(bob_client, alice_client):
    assert bob_client.post("/runners/enroll/").status_code == 403
    page = alice_client.post("/runners/enroll/")
    assert page.status_code == 200
    token = EnrollmentToken.objects.get()
    command = page.context["new_token"]
    assert command.startswith(f"sse_{token.prefix}_")
    assert (
        f"stackselect-runner enroll --url http://testserver --token {command} --name"
        in page.content.decode()
    )


@pytest.mark.parametrize("header", ["", "Runner", "Runner a b", "Token abc", "Runner ssr_x_y"])
def test_a_missing_or_malformed_credential_gets_401(client, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post("/api/runner/v1/heartbeat", data={}, **extra)
    assert response.status_code == 401
