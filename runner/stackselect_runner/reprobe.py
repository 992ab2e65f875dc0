"""A running runner follows its own probe: a model added to the store, an engine installed or
removed, is reported to the server and consumed from without a restart.

`ProbeWatch` probes every `STACKSELECT_RUNNER_REPROBE_INTERVAL_S` in its own thread (a wedged
`nvidia-smi` must not delay the heartbeat that keeps the leases alive). When the probe differs
from the one last sent, or a heartbeat answer lists other queues than those consumed (the
server's labels are stale: it was upgraded, or restored from a backup), it posts the probe
(`POST probe`, which re-derives the labels and re-routes the team's waiting jobs) and hands the
answer's queues to `QueueSwitch`, which starts and cancels the Celery consumer's queues. The
consumer is not thread-safe, so the switch only schedules `add_task_queue`/`cancel_task_queue`
with `call_soon`, which the worker's own loop runs (the path Celery's remote-control
`add_consumer` takes too). The GPUs are the exception: the worker's job slots and device pool
are sized at start, so a re-probe keeps reporting the GPUs it runs jobs on and says that a
restart is needed to use others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from celery import bootsteps

from stackselect_runner.api import ApiError
from stackselect_runner.config import ConfigError, RunnerSettings, SimulatedHardware
from stackselect_runner.model_store import ModelStore
from stackselect_runner.probe import probe_environment

logger = logging.getLogger(__name__)
# The probe fields that describe the GPUs, fixed for the worker's lifetime (see above).
GPU_FIELDS = ("gpus", "gpu_count", "gpu_model", "interconnect", "topology")


def runner_probe(settings: RunnerSettings, simulated: SimulatedHardware | None) -> dict[str, Any]:
    """The probe, with the slugs of the models this runner's store holds and its draft models
    (ConfigError for a malformed store)."""
    store = ModelStore.of(settings)
    return probe_environment(
        simulated,
        models=sorted(store.models),
        drafts=store.draft_models(),
        offered=settings.engines,
    )


class TaskConsumer(Protocol):
    """What the switch uses of celery.worker.consumer.Consumer."""

    def call_soon(self, p: Callable[..., Any], *args: Any) -> Any: ...

    def add_task_queue(self, queue: str) -> None: ...

    def cancel_task_queue(self, queue: str) -> None: ...


class QueueSwitch:
    """The queues the worker should consume, applied to its consumer once it is running."""

    def __init__(self, queues: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._wanted = list(queues)
        self._consuming = list(queues)  # what the worker was started on or last told
        self._consumer: TaskConsumer | None = None

    def wanted(self) -> list[str]:
        with self._lock:
            return list(self._wanted)

    def attach(self, consumer: TaskConsumer) -> None:
        """Called by the worker's consumer step when it starts (again, after a reconnect)."""
        with self._lock:
            self._consumer = consumer
            self._sync()

    def follow(self, queues: Sequence[str]) -> None:
        """Consume exactly `queues` from now on; an empty list (an answer without queues)
        changes nothing, so a server hiccup never leaves the runner deaf."""
        if not queues:
            return
        with self._lock:
            self._wanted = list(queues)
            self._sync()

    def _sync(self) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        for queue in self._wanted:
            if queue not in self._consuming:
                logger.info("now consuming %s", queue)
                consumer.call_soon(consumer.add_task_queue, queue)
        for queue in self._consuming:
            if queue not in self._wanted:
                logger.info("no longer consuming %s", queue)
                consumer.call_soon(consumer.cancel_task_queue, queue)
        self._consuming = list(self._wanted)


def consumer_step(switch: QueueSwitch) -> type[bootsteps.StartStopStep]:
    """A consumer bootstep that hands the started consumer to `switch`."""

    class FollowQueues(bootsteps.StartStopStep):
        requires = ("celery.worker.consumer.tasks:Tasks",)

        def start(self, parent: Any) -> None:
            switch.attach(parent)

    return FollowQueues


class ProbeApi(Protocol):
    def send_probe(self, probe: Mapping[str, Any]) -> dict[str, Any]: ...


class ProbeWatch:
    """Probes every `interval_s`; a changed probe is sent and the answer's queues followed."""

    def __init__(
        self,
        api: ProbeApi,
        probe: Callable[[], dict[str, Any]],
        switch: QueueSwitch,
        interval_s: float,
        *,
        sent: Mapping[str, Any],
        server_queues: Callable[[], Sequence[str] | None],
    ) -> None:
        """`sent`: the probe posted at start; `server_queues`: the queues of the latest
        heartbeat answer (None before the first)."""
        if interval_s <= 0:
            raise ValueError(f"re-probe interval must be > 0, got {interval_s}")
        self.api = api
        self.probe = probe
        self.switch = switch
        self.interval_s = interval_s
        self.server_queues = server_queues
        self._sent = dict(sent)
        self._seen: list[str] = []  # the server's queues when the last probe was sent
        self._gpus_changed = False
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="runner-reprobe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _server_disagrees(self) -> bool:
        """A heartbeat answer newer than the last probe lists other queues than those
        consumed (an answer already seen when the probe was sent proves nothing)."""
        queues = list(self.server_queues() or ())
        return bool(queues) and queues != self._seen and set(queues) != set(self.switch.wanted())

    def check(self) -> bool:
        """Probe once; True when a changed probe (or one the server's view lacks) was taken."""
        try:
            probe = self.probe()
        except ConfigError as exc:
            logger.warning("re-probe skipped, the old labels stay: %s", exc)
            return False
        probe = self._with_started_gpus(probe)
        if probe == self._sent and not self._server_disagrees():
            return False
        try:
            answer = self.api.send_probe(probe)
        except ApiError as exc:
            logger.warning("the changed probe was not taken, retrying later: %s", exc.describe())
            return False
        self._sent = probe
        self._seen = list(self.server_queues() or ())
        models = ", ".join(probe.get("models") or []) or "none"
        logger.info("probe sent (models: %s); following the server's queues", models)
        self.switch.follow(answer.get("queues") or [])
        return True

    def _with_started_gpus(self, probe: dict[str, Any]) -> dict[str, Any]:
        started = {name: self._sent.get(name) for name in GPU_FIELDS}
        if all(probe.get(name) == value for name, value in started.items()):
            return probe
        if not self._gpus_changed:
            self._gpus_changed = True
            logger.warning(
                "the GPUs changed since start (%s -> %s GPU(s)); restart the runner to run jobs "
                "on them, until then it reports the GPUs it started with",
                started["gpu_count"],
                probe.get("gpu_count"),
            )
        return {**probe, **started}

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.check()
