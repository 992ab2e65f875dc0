"""The runner's Celery worker: one task, configured only from the credentials and environment.

The web app sends `stackselect.runner.run_attempt` by name with `{"attempt_id": n, "gpu_count":
g}`; this side registers that one name and never shares code with the web app. One worker
thread per GPU: each job holds its own devices (devices.py), so an 8-GPU runner runs eight
1-GPU jobs at once. Tasks are acknowledged late, and the broker's visibility timeout is far
longer than any job because the server's lease, not the broker, decides when a job is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from celery import Celery, Task

from stackselect_runner.config import Credentials, RunnerSettings
from stackselect_runner.jobrun import Outcome
from stackselect_runner.reprobe import QueueSwitch, consumer_step

TASK_NAME = "stackselect.runner.run_attempt"
# A claim the API never answered is retried this many times, this far apart.
CLAIM_RETRY_COUNTDOWN_S = 30
CLAIM_MAX_RETRIES = 20
logger = logging.getLogger(__name__)


class AttemptRunner(Protocol):
    """The job runner as the task sees it (jobrun.JobRunner)."""

    def run(self, attempt_id: int, gpu_count: int | None = None) -> Outcome: ...


def celery_settings(
    credentials: Credentials, settings: RunnerSettings, concurrency: int = 1
) -> dict[str, Any]:
    transport = {
        "visibility_timeout": settings.visibility_timeout_s,
        **credentials.broker_transport_options,
        **(settings.broker_transport_options or {}),
    }
    return {
        "broker_url": settings.broker_url or credentials.broker_url,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": False,
        "task_ignore_result": True,
        "worker_prefetch_multiplier": 1,
        "worker_concurrency": concurrency,
        "worker_hijack_root_logger": False,
        # A broker blip must not cancel the benchmark in flight: the lease, kept alive over
        # HTTP, decides whether the attempt lives (Celery 6 would cancel by default).
        "worker_cancel_long_running_tasks_on_connection_loss": False,
    }


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def build_worker_app(
    credentials: Credentials,
    settings: RunnerSettings,
    job_runner: AttemptRunner,
    concurrency: int = 1,
    switch: QueueSwitch | None = None,
) -> Celery:
    """`switch`, when given, receives the worker's consumer so queues can change at runtime."""
    app = Celery("stackselect-runner", set_as_current=False)
    app.conf.update(celery_settings(credentials, settings, concurrency))
    if switch is not None:
        app.steps["consumer"].add(consumer_step(switch))

    @app.task(name=TASK_NAME, bind=True, acks_late=True, ignore_result=True)
    def run_attempt(task: Task, attempt_id: int, gpu_count: int | None = None) -> str:
        if not _whole(attempt_id):
            logger.error("run_attempt: attempt_id must be an integer, got %r; dropped", attempt_id)
            return Outcome.DROPPED.value
        if gpu_count is not None and (not _whole(gpu_count) or gpu_count < 0):
            logger.error("run_attempt: gpu_count must be a whole number, got %r", gpu_count)
            return Outcome.DROPPED.value
        outcome = job_runner.run(attempt_id, gpu_count)
        if outcome is Outcome.CLAIM_UNREACHABLE:
            raise task.retry(countdown=CLAIM_RETRY_COUNTDOWN_S, max_retries=CLAIM_MAX_RETRIES)
        return outcome.value

    return app


def worker_argv(
    runner_id: int, queues: Sequence[str], loglevel: str = "INFO", concurrency: int = 1
) -> list[str]:
    """One process, one thread per job slot: the heartbeat thread must see every job."""
    if not queues:
        raise ValueError("queues must not be empty")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    return [
        "worker",
        "--queues", ",".join(queues),
        "--concurrency", str(concurrency),
        "--pool", "threads",
        "--hostname", f"runner-{runner_id}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel", loglevel,
    ]  # fmt: skip
