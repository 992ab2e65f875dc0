"""Engine-aware dispatch: a job reaches only runners whose probe reports its engine.

A measured plan for an engine no runner has waits, saying which runners there are and what
each lacks (the engine, the model in its store, for a speculating job the draft model declared
for that model or the llama.cpp frontend that speculates its way); it never falls back to the
simulated engine. Messages go through the real Redis broker, and runners enroll and claim
through the real runner API.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone
from stackselect_domain.speculative import Speculative
from stackselect_runner.model_store import ModelStore
from stackselect_runner.reprobe import ProbeWatch, QueueSwitch

from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.runners.models import Runner
from apps.runners.services import enrollment_token_create
from tests.benchmarks.factories import RunnerClient, simulated_probe

pytestmark = pytest.mark.django_db
ENROLL = "/api/runner/v1/enroll"
MODEL = "llama-3.1-8b"
NEEDS = f"vLLM 0.8 with model {MODEL} on 1 x NVIDIA H100 SXM (h100-sxm)"
VLLM_POOL = f"h100-sxm.1.vllm.v0.8.model-{MODEL}"


@pytest.fixture
def broker():
    connection = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    yield connection
    connection.close()


def _enroll(client, alice, acme, name: str, engines: dict[str, str], models=(MODEL,)):
    """Enroll through the runner API (its model store holding `models`); returns (runner, its
    API client, its queues)."""
    _, token = enrollment_token_create(actor_user=alice, team=acme)
    probe = {**simulated_probe(), "engines": engines, "models": list(models)}
    response = client.post(
        ENROLL, data={"token": token, "name": name, "probe": probe}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    return (
        Runner.objects.get(pk=body["runner_id"]),
        RunnerClient(body["credential"]),
        body["queues"],
    )


def _measured_plan(alice, acme, selection, capture):
    with capture(execute=True):
        return plan_create(
            actor_user=alice,
            team=acme,
            selection_id=selection.pk,
            options=PlanOptions(request_count=4, load_points=({"rate_rps": 1.0},)),
        )


def test_a_job_for_an_engine_no_runner_has_waits_with_why_and_never_runs_simulated(
    alice, acme, selection, client, alice_client, broker, django_capture_on_commit_callbacks
):
    _, sim_api, sim_queues = _enroll(client, alice, acme, "sim-1", {"simulated": "0.1.0"})
    queue = f"pool.{acme.pk}.{VLLM_POOL}"
    broker.delete(queue)
    try:
        plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
        job = plan.jobs.get()
        attempt = job.attempts.get()
        assert job.state == "waiting_for_runner"
        assert f"No online runner has {NEEDS}." in job.state_reason
        assert "sim-1 lacks vLLM 0.8 (it has simulated)" in job.state_reason
        page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
        assert f"No online runner has {NEEDS}." in page
        # The message waits on the vLLM pool, which the simulated runner does not consume.
        assert attempt.queue == queue and queue not in sim_queues
        messages = [json.loads(raw) for raw in broker.lrange(queue, 0, -1)]
        assert [message["headers"]["task"] for message in messages] == [
            "stackselect.runner.run_attempt"
        ]
        # Even a runner that reaches the attempt some other way cannot take it.
        refused = sim_api.post(f"attempts/{attempt.pk}/claim")
        assert refused.status_code == 403 and "vllm on 1 x h100-sxm" in refused.json()["detail"]
        attempt.refresh_from_db()
        assert (attempt.state, attempt.runner_id) == ("dispatched", None)
        assert job.engine["adapter"] == "vllm"
    finally:
        broker.delete(queue)


def test_the_job_runs_on_a_runner_that_has_the_engine_once_it_enrolls(
    alice, acme, selection, client, broker, django_capture_on_commit_callbacks
):
    _enroll(client, alice, acme, "sim-1", {"simulated": "0.1.0"})
    plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
    job = plan.jobs.get()
    broker.delete(job.attempts.get().queue)
    assert job.state == "waiting_for_runner"
    gpu, gpu_api, gpu_queues = _enroll(
        client, alice, acme, "gpu-1", {"vllm": "0.8.0", "simulated": "0.1.0"}
    )
    job.refresh_from_db()
    assert job.state == "queued"
    assert job.state_reason == (
        f"Queued for {NEEDS} on the runners that have it: gpu-1. "
        "Not the others: sim-1 lacks vLLM 0.8 (it has simulated)."
    )
    attempt = job.attempts.get()
    assert attempt.queue in gpu_queues
    claim = gpu_api.post(f"attempts/{attempt.pk}/claim")
    assert claim.status_code == 200, claim.content
    assert claim.json()["engine"]["adapter"] == "vllm"
    attempt.refresh_from_db()
    assert attempt.runner_id == gpu.pk


def test_a_job_whose_only_fitting_runner_is_offline_says_so(
    alice, acme, selection, client, django_capture_on_commit_callbacks
):
    gpu, _, _ = _enroll(client, alice, acme, "gpu-1", {"vllm": "0.8.0"})
    Runner.objects.filter(pk=gpu.pk).update(last_heartbeat_at=timezone.now() - timedelta(hours=1))
    plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
    job = plan.jobs.get()
    assert job.state == "waiting_for_runner"
    assert job.state_reason == (
        f"No online runner has {NEEDS}: the runners that would qualify are offline: gpu-1."
    )


def test_a_dry_run_goes_only_to_runners_that_offer_the_simulated_engine(
    alice, acme, selection, client, broker, django_capture_on_commit_callbacks
):
    _enroll(client, alice, acme, "gpu-1", {"vllm": "0.8.0"})
    with django_capture_on_commit_callbacks(execute=True):
        plan = plan_create(
            actor_user=alice,
            team=acme,
            selection_id=selection.pk,
            options=PlanOptions(run_mode="simulated", request_count=4),
        )
    job = plan.jobs.get()
    assert job.state == "waiting_for_runner"
    assert "gpu-1 lacks the simulated engine (it has vllm 0.8.0)" in job.state_reason
    queue = job.attempts.get().queue
    broker.delete(queue)
    assert queue == f"pool.{acme.pk}.h100-sxm.1.simulated"


def test_a_runner_with_another_release_series_of_the_engine_never_gets_the_job(
    alice, acme, selection, client, alice_client, broker, django_capture_on_commit_callbacks
):
    _, old_api, old_queues = _enroll(
        client, alice, acme, "gpu-old", {"vllm": "0.7.3", "simulated": "0.1.0"}
    )
    plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
    job = plan.jobs.get()
    attempt = job.attempts.get()
    broker.delete(attempt.queue)
    assert job.state == "waiting_for_runner"
    assert job.state_reason.startswith(f"No online runner has {NEEDS}. ")
    assert "gpu-old lacks vLLM 0.8 (it has simulated, vllm 0.7.3)" in job.state_reason
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert "gpu-old lacks vLLM 0.8 (it has simulated, vllm 0.7.3)" in page
    assert attempt.queue not in old_queues
    assert old_api.post(f"attempts/{attempt.pk}/claim").status_code == 403

    _, new_api, new_queues = _enroll(client, alice, acme, "gpu-new", {"vllm": "0.8.4"})
    job.refresh_from_db()
    assert job.state == "queued"
    assert "on the runners that have it: gpu-new." in job.state_reason
    assert "Not the others: gpu-old lacks vLLM 0.8" in job.state_reason
    assert attempt.queue in new_queues
    assert new_api.post(f"attempts/{attempt.pk}/claim").status_code == 200


def test_a_runner_whose_store_lacks_the_model_is_named_and_never_gets_the_job(
    alice, acme, selection, client, alice_client, broker, django_capture_on_commit_callbacks
):
    _, gpu_api, queues = _enroll(client, alice, acme, "gpu-2", {"vllm": "0.8.0"}, models=())
    plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
    job = plan.jobs.get()
    attempt = job.attempts.get()
    broker.delete(attempt.queue)
    assert job.engine["model_key"] == MODEL
    assert job.state == "waiting_for_runner"
    assert job.state_reason.startswith(f"No online runner has {NEEDS}. ")
    missing = f"gpu-2 lacks model {MODEL} in its store (it has no model)"
    assert missing in job.state_reason
    assert missing in alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert attempt.queue not in queues
    refused = gpu_api.post(f"attempts/{attempt.pk}/claim")
    assert refused.status_code == 403 and f"lacks model {MODEL}" in refused.json()["detail"]

    # The operator adds the model (`stackselect-runner models add`) and the runner probes again.
    probe = {**simulated_probe(), "engines": {"vllm": "0.8.0"}, "models": [MODEL]}
    answer = gpu_api.post("probe", {"probe": probe})
    assert answer.status_code == 200, answer.content
    job.refresh_from_db()
    assert job.state == "queued"
    assert job.state_reason == f"Queued for {NEEDS} on the runners that have it: gpu-2."
    assert attempt.queue in answer.json()["queues"]
    assert gpu_api.post(f"attempts/{attempt.pk}/claim").status_code == 200


class _ProbeOverApi:
    """The runner agent's `send_probe`, through the real runner API of this test's server."""

    def __init__(self, api: RunnerClient) -> None:
        self.api = api

    def send_probe(self, probe: dict) -> dict:
        response = self.api.post("probe", {"probe": probe})
        assert response.status_code == 200, response.content
        return response.json()


def test_a_running_runner_that_gains_the_model_reports_it_and_the_waiting_job_goes_to_it(
    alice, acme, selection, client, broker, tmp_path, django_capture_on_commit_callbacks
):
    _, gpu_api, queues = _enroll(client, alice, acme, "gpu-2", {"vllm": "0.8.0"}, models=())
    store_file = tmp_path / "models.json"

    def probe() -> dict:
        """What the agent's probe says of this host: vLLM 0.8 and the models in its store."""
        models = sorted(ModelStore.load(store_file).models)
        return {**simulated_probe(), "engines": {"vllm": "0.8.0"}, "models": models}

    def heartbeat_queues() -> list[str]:
        return gpu_api.post("heartbeat", {"attempts": []}).json()["queues"]

    switch = QueueSwitch(queues)
    watch = ProbeWatch(
        _ProbeOverApi(gpu_api), probe, switch, 1.0, sent=probe(), server_queues=heartbeat_queues
    )
    plan = _measured_plan(alice, acme, selection, django_capture_on_commit_callbacks)
    job = plan.jobs.get()
    attempt = job.attempts.get()
    try:
        assert job.state == "waiting_for_runner"
        assert f"gpu-2 lacks model {MODEL} in its store (it has no model)" in job.state_reason
        assert watch.check() is False  # nothing changed: nothing sent, nothing re-routed

        store = ModelStore.load(store_file)  # `stackselect-runner models add`, while it runs
        store.add(MODEL, str(tmp_path))
        store.save()
        assert watch.check() is True
        job.refresh_from_db()
        assert job.state == "queued"
        assert job.state_reason == f"Queued for {NEEDS} on the runners that have it: gpu-2."
        assert attempt.queue not in queues and attempt.queue in switch.wanted()
        assert set(heartbeat_queues()) == set(switch.wanted())
        assert gpu_api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    finally:
        broker.delete(attempt.queue)


EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def _speculating_plan(alice, acme, selection, capture, speculative: dict):
    with capture(execute=True):
        return plan_create(
            actor_user=alice,
            team=acme,
            selection_id=selection.pk,
            options=PlanOptions(
                request_count=4,
                load_points=({"rate_rps": 1.0},),
                speculative=Speculative.from_dict(speculative),
            ),
        )


def test_a_speculating_job_waits_for_a_runner_whose_store_has_the_draft_for_its_model(
    alice, acme, selection, client, alice_client, broker, django_capture_on_commit_callbacks
):
    _, gpu_api, queues = _enroll(client, alice, acme, "gpu-1", {"vllm": "0.8.0"})
    speculative = {"method": "eagle3", "draft_model": EAGLE3, "num_tokens": 3}
    plan = _speculating_plan(
        alice, acme, selection, django_capture_on_commit_callbacks, speculative
    )
    job = plan.jobs.get()
    attempt = job.attempts.get()
    try:
        needs = f"vLLM 0.8 with model {MODEL} and draft model {EAGLE3} on 1 x NVIDIA H100 SXM"
        assert job.state == "waiting_for_runner"
        assert job.state_reason.startswith(f"No online runner has {needs} (h100-sxm). ")
        missing = f"gpu-1 lacks draft model {EAGLE3} for {MODEL} in its store (it has no draft"
        assert missing in job.state_reason
        assert f"models add {EAGLE3} /path/to/draft --draft-for {MODEL}" in job.state_reason
        assert missing in alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
        assert attempt.queue not in queues
        refused = gpu_api.post(f"attempts/{attempt.pk}/claim")
        assert (
            refused.status_code == 403 and f"lacks draft model {EAGLE3}" in refused.json()["detail"]
        )

        # `stackselect-runner models add <key> <path> --draft-for llama-3.1-8b`, then a probe.
        probe = {**simulated_probe(), "engines": {"vllm": "0.8.0"}, "models": [MODEL],
                 "draft_models": {EAGLE3: [MODEL]}}  # fmt: skip
        answer = gpu_api.post("probe", {"probe": probe})
        assert answer.status_code == 200, answer.content
        job.refresh_from_db()
        assert job.state == "queued"
        assert (
            job.state_reason == f"Queued for {needs} (h100-sxm) on the runners that have it: gpu-1."
        )
        assert attempt.queue in answer.json()["queues"]
        assert gpu_api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    finally:
        broker.delete(attempt.queue)


def _llama_cpp(selection) -> None:
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "engine": "llama-cpp", "engine_version": "b4034"}
    candidate.save(update_fields=["stack"])


def test_a_llama_cpp_draft_job_waits_for_llama_server_and_a_prompt_lookup_job_for_the_python_one(
    alice, acme, selection, client, broker, django_capture_on_commit_callbacks
):
    _llama_cpp(selection)
    python_engines = {"llama-cpp": "llama-cpp-python 0.3.36", "llama-cpp-python": "0.3.36"}
    _, python_api, python_queues = _enroll(client, alice, acme, "cpu-python", python_engines)
    # A draft plan needs llama-server: the runner that has only llama-cpp-python is told why.
    draft = {"method": "draft", "draft_model": "llama-3.2-1b-gguf", "num_tokens": 4}
    plan = _speculating_plan(alice, acme, selection, django_capture_on_commit_callbacks, draft)
    job = plan.jobs.get()
    attempt = job.attempts.get()
    queues = [attempt.queue]
    try:
        assert job.engine["options"]["frontend"] == "llama-server"
        assert job.state == "waiting_for_runner"
        assert (
            "cpu-python lacks llama-server (llama.cpp's own server, needed to speculate with a "
            "draft model; it has llama-cpp-python 0.3.36)"
        ) in job.state_reason
        assert attempt.queue not in python_queues
        assert python_api.post(f"attempts/{attempt.pk}/claim").status_code == 403

        _, server_api, server_queues = _enroll(
            client, alice, acme, "gpu-server", {"llama-cpp": "4034 (3e0ba0e6)"}
        )
        job.refresh_from_db()
        assert "gpu-server lacks draft model llama-3.2-1b-gguf for" in job.state_reason
        assert attempt.queue not in server_queues
        server_probe = {
            **simulated_probe(),
            "engines": {"llama-cpp": "4034 (3e0ba0e6)"},
            "models": [MODEL],
            "draft_models": {"llama-3.2-1b-gguf": [MODEL]},
        }
        answer = server_api.post("probe", {"probe": server_probe})
        job.refresh_from_db()
        assert job.state == "queued"
        assert "on the runners that have it: gpu-server." in job.state_reason
        assert attempt.queue in answer.json()["queues"]

        # Prompt lookup runs only in llama-cpp-python: the llama-server runner does not take it.
        ngram = {"method": "ngram", "num_tokens": 3}
        lookup = _speculating_plan(
            alice, acme, selection, django_capture_on_commit_callbacks, ngram
        )
        lookup_job = lookup.jobs.get()
        queues.append(lookup_job.attempts.get().queue)
        assert lookup_job.engine["options"]["frontend"] == "llama-cpp-python"
        assert lookup_job.state == "queued"
        assert "on the runners that have it: cpu-python." in lookup_job.state_reason
        assert "Not the others: gpu-server lacks llama-cpp-python" in lookup_job.state_reason
        assert queues[1] in python_queues and queues[1] not in answer.json()["queues"]
        assert server_api.post(f"attempts/{lookup_job.attempts.get().pk}/claim").status_code == 403
    finally:
        broker.delete(*queues)
