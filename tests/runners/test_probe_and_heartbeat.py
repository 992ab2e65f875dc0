from datetime import timedelta

from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.runners.models import Runner
from tests.benchmarks.factories import simulated_probe


def test_a_new_probe_rederives_the_labels_and_queues(sim_runner, acme):
    runner, api = sim_runner
    response = api.post("probe", {"probe": simulated_probe("l40s", gpu_count=2)})
    assert response.status_code == 200
    assert response.json()["queues"] == [
        f"runner.{runner.pk}",
        f"pool.{acme.pk}.l40s.1.simulated",
        f"pool.{acme.pk}.l40s.2.simulated",
    ]
    runner.refresh_from_db()
    assert (runner.accelerator, runner.gpu_count) == ("l40s", 2)
    probe_event = AuditEvent.objects.get(action="runner.probe")
    assert probe_event.before["labels"]["accelerator"] == "h100-sxm"
    assert probe_event.after["labels"]["accelerator"] == "l40s"


def test_a_bad_probe_is_a_400_naming_the_field(sim_runner):
    _, api = sim_runner
    response = api.post("probe", {"probe": {"gpu_count": "four"}})
    assert response.status_code == 400
    assert "probe.gpu_count" in str(response.json())


def test_a_heartbeat_after_silence_brings_the_runner_back_online_and_is_audited_once(
    sim_runner,
):
    runner, api = sim_runner
    Runner.objects.filter(pk=runner.pk).update(
        last_heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    assert api.post("heartbeat", {}).json()["cancel"] is False
    assert api.post("heartbeat", {}).status_code == 200
    assert AuditEvent.objects.filter(action="runner.online").count() == 1
