"""Rotating or revoking another team's runner is a 404, like reading it (it was a redirect)."""

from tests.benchmarks.factories import enrolled_runner


def test_charlie_gets_404_rotating_or_revoking_alices_runner(alice, acme, charlie_client):
    runner, _ = enrolled_runner(alice, acme)
    digest = runner.credential_digest
    for action in ("rotate", "revoke"):
        assert charlie_client.post(f"/runners/{runner.pk}/{action}/").status_code == 404
    runner.refresh_from_db()
    assert runner.revoked_at is None and runner.credential_digest == digest
