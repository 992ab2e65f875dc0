from apps.audit.models import AuditEvent
from tests.benchmarks.factories import RunnerClient


def test_a_revoked_credential_is_refused_with_401(alice_client, sim_runner):
    runner, api = sim_runner
    assert api.post("heartbeat", {}).status_code == 200
    response = alice_client.post(f"/runners/{runner.pk}/revoke/")
    assert response.status_code == 302
    assert api.post("heartbeat", {}).status_code == 401
    assert AuditEvent.objects.filter(action="runner.revoke", object_id=str(runner.pk)).exists()


def test_rotating_shows_a_new_credential_once_and_refuses_the_old(alice_client, sim_runner):
    runner, old = sim_runner
    page = alice_client.post(f"/runners/{runner.pk}/rotate/")
    new_credential = page.context["new_credential"]
    assert new_credential in page.content.decode()
    assert old.post("heartbeat", {}).status_code == 401
    assert RunnerClient(new_credential).post("heartbeat", {}).status_code == 200
    assert new_credential not in alice_client.get(f"/runners/{runner.pk}/").content.decode()


def test_an_engineer_can_neither_rotate_nor_revoke(bob_client, sim_runner):
    runner, api = sim_runner
    assert bob_client.post(f"/runners/{runner.pk}/revoke/").status_code == 403
    assert bob_client.post(f"/runners/{runner.pk}/rotate/").status_code == 403
    assert api.post("heartbeat", {}).status_code == 200


def test_another_team_sees_no_runner_of_ours(charlie_client, sim_runner):
    runner, _ = sim_runner
    assert charlie_client.get(f"/runners/{runner.pk}/").status_code == 404
    assert charlie_client.get("/api/v1/runners/").json()["results"] == []
