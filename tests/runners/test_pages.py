from datetime import timedelta

from django.utils import timezone

from apps.runners.models import Runner


def test_the_empty_runner_list_says_how_to_enroll(alice_client, rows):
    page = alice_client.get("/runners/").content.decode()
    assert "No runners yet" in page
    assert "stackselect-runner enroll --url http://testserver" in page


def test_the_list_shows_busy_with_the_current_job_and_offline_runners(
    alice_client, attempt, sim_runner, alice, acme
):
    runner, api = sim_runner
    api.post(f"attempts/{attempt.pk}/claim")
    api.post(
        f"attempts/{attempt.pk}/progress",
        {"load_point": 1, "done": 5, "total": 10, "message": "rate 2 req/s"},
    )
    silent = Runner.objects.create(
        team=acme,
        name="old-box",
        credential_prefix="abcdefgh",
        credential_digest="x",
        last_heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    response = alice_client.get("/runners/")
    rows = {row.runner.pk: row for row in response.context["rows"]}
    assert rows[runner.pk].state == "busy"
    assert rows[runner.pk].attempt.pk == attempt.pk
    assert rows[runner.pk].fraction == 0.75  # load point 1 of 2, half done: (1 + 0.5) / 2
    assert rows[silent.pk].state == "offline"
    assert "rate 2 req/s" in response.content.decode()


def test_the_detail_page_shows_the_probe_and_admin_actions(alice_client, bob_client, sim_runner):
    runner, _ = sim_runner
    page = alice_client.get(f"/runners/{runner.pk}/").content.decode()
    assert "laptop" in page and 'id="revoke"' in page and "data-confirm=" in page
    assert 'id="revoke"' not in bob_client.get(f"/runners/{runner.pk}/").content.decode()


def test_metrics_report_runners_online_heartbeat_age_and_jobs_by_state(client, attempt):
    Runner.objects.update(last_heartbeat_at=timezone.now() - timedelta(seconds=20))
    text = client.get("/metrics").content.decode()
    assert "stackselect_runners_online 1.0" in text
    age = next(
        line
        for line in text.splitlines()
        if line.startswith("stackselect_runner_oldest_heartbeat_age_seconds ")
    )
    assert 19 <= float(age.split()[1]) < 60
    assert 'stackselect_benchmark_jobs{state="queued"} 1.0' in text
    assert 'stackselect_benchmark_jobs{state="running"} 0.0' in text
