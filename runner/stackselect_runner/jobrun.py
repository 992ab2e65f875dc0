"""Run one benchmark attempt end to end: claim, launch, measure, upload, finish.

Every expected failure (a refused claim, a bad spec, an engine that does not start, a cancel,
an unreachable API) ends in an `Outcome` and, when the attempt is ours, a `finish` call with
the reason; nothing expected is raised, so a Celery delivery is always acknowledged.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from typing import Any, TextIO

from stackselect_domain.ratesearch import RateSearch, SearchSpec

import stackselect_runner
from stackselect_runner.api import ApiError, ApiUnreachable, Conflict, RunnerApiClient
from stackselect_runner.config import DEFAULT_HEARTBEAT_INTERVAL_S, ConfigError, RunnerSettings
from stackselect_runner.devices import DevicePool
from stackselect_runner.engines import (
    EngineProcess,
    EngineStartError,
    LaunchSpec,
    free_loopback_port,
    get_engine_adapter,
)
from stackselect_runner.engines.simulated import SimulatedEngineAdapter
from stackselect_runner.harness import (
    HarnessSpec,
    LoadPoint,
    LoadPointResult,
    ProgressCallback,
    arun_load_point,
    records_verdict,
)
from stackselect_runner.heartbeat import Heartbeat
from stackselect_runner.logship import LogShipper
from stackselect_runner.model_store import ModelMissing, ModelStore
from stackselect_runner.quality_probe import QualitySpec, answered, run_probe
from stackselect_runner.reporting import Reporter
from stackselect_runner.terminal import end_progress_line, progress_printer, summary_line
from stackselect_runner.uploads import result_uploads

CANCEL_POLL_S = 0.1
# The server keeps the first 2000 characters of a reason; clip_reason fits both ends in them.
MAX_REASON_CHARS = 2000
logger = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # Not ours to run: the claim was refused (409) or the server rejected this runner.
    DROPPED = "dropped"
    # The claim never got an answer; the delivery may be retried later.
    CLAIM_UNREACHABLE = "claim_unreachable"


class JobCancelled(Exception):
    """The server asked (through a heartbeat) to stop this attempt."""


class JobFailed(Exception):
    """The attempt cannot succeed; the message is the finish reason."""


def clip_reason(reason: str) -> str:
    """Keep the start (what failed) and the end (the log tail that says why)."""
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    head = MAX_REASON_CHARS // 4
    return f"{reason[:head]}\n…\n{reason[-(MAX_REASON_CHARS - head - 3) :]}"


def _fixed_load_points(spec: Mapping[str, Any]) -> tuple[LoadPoint, ...]:
    raw_points = spec.get("load_points")
    if not isinstance(raw_points, list) or not raw_points:
        raise ValueError("load_points must be a non-empty list")
    return tuple(
        LoadPoint.from_dict({"index": position, **point})
        for position, point in enumerate(raw_points)
    )


def _first_requests(harness: HarnessSpec, count: int) -> HarnessSpec:
    """A search probe sends the first `count` requests of the schedule, in arrival order."""
    ordered = sorted(harness.requests, key=lambda request: (request.arrival_s, request.index))
    return replace(harness, requests=tuple(ordered[:count]))


def _stored_checkpoints(
    store: ModelStore, model_key: str, options: Mapping[str, Any]
) -> dict[str, str]:
    """The local checkpoints of the job's model and of its speculative draft model, if any
    (ModelMissing before any launch when the store lacks either)."""
    found = {"model_key": model_key, "path": store.checkpoint_for(model_key)}
    speculative = options.get("speculative")
    draft = speculative.get("draft_model") if isinstance(speculative, Mapping) else None
    if isinstance(draft, str) and draft.strip():
        found["draft_model_key"] = draft.strip()
        found["draft_path"] = store.draft_checkpoint_for(draft.strip(), model_key)
    return found


@dataclass(frozen=True, slots=True)
class JobPlan:
    """The parsed job spec: what to launch, and the load points or the rate search to run.

    With a `search`, the spec's load points are not measured: the search picks each probe.
    """

    adapter_slug: str
    launch: LaunchSpec
    harness: HarnessSpec
    load_points: tuple[LoadPoint, ...]
    search: SearchSpec | None = None
    # {"model_key", "path"}: the checkpoint this runner's model store gave the job, if any, and
    # {"draft_model_key", "draft_path"} when it speculates with a draft model.
    model_store: Mapping[str, str] | None = None
    quality: QualitySpec | None = None
    tuning: Mapping[str, Any] | None = None

    @classmethod
    def from_spec(
        cls,
        spec: Mapping[str, Any],
        settings: RunnerSettings,
        attempt_id: int,
        env: Mapping[str, str] | None = None,
    ) -> JobPlan:
        engine = spec.get("engine")
        if not isinstance(engine, Mapping):
            raise ValueError("engine must be an object")
        for name in ("adapter", "model"):
            if not engine.get(name):
                raise ValueError(f"engine: missing field '{name}'")
        options = engine.get("options") or {}
        if not isinstance(options, Mapping):
            raise ValueError("engine.options must be an object")
        model_store = None
        if engine.get("model_key") and engine["adapter"] != SimulatedEngineAdapter.slug:
            # The simulated engine ships with the agent and needs no checkpoint.
            model_store = _stored_checkpoints(
                ModelStore.of(settings), str(engine["model_key"]), options
            )
            options = {**options, "model_path": model_store["path"]}
            if "draft_path" in model_store:
                options["draft_model_path"] = model_store["draft_path"]
        launch = LaunchSpec(
            model=str(engine["model"]),
            served_model_name=engine.get("served_model_name"),
            port=free_loopback_port(),
            log_path=settings.resolved_work_dir / f"attempt-{attempt_id}" / "engine.log",
            options=dict(options),
            env=dict(env or {}),
        )
        harness = HarnessSpec.from_job_spec(spec, launch.base_url)
        quality = QualitySpec.from_job_spec(spec)
        search = None if spec.get("search") is None else SearchSpec.from_dict(spec["search"])
        return cls(
            adapter_slug=str(engine["adapter"]),
            launch=launch,
            harness=harness
            if search is None
            else _first_requests(harness, search.requests_per_probe),
            load_points=_fixed_load_points(spec) if search is None else (),
            search=search,
            model_store=model_store,
            quality=quality,
            tuning=engine.get("tuning"),
        )

    def effective_config(self) -> dict[str, Any]:
        return {
            "adapter": self.adapter_slug,
            "model": self.launch.model,
            "served_model_name": self.launch.served_name,
            "options": dict(self.launch.options),
            # Which tuning trial this is and the probe's sampling: both part of what was run.
            **({"tuning": dict(self.tuning)} if self.tuning else {}),
            **({"sampling": dict(self.quality.sampling)} if self.quality else {}),
        }


async def _measure_until_cancelled(
    harness: HarnessSpec,
    point: LoadPoint,
    cancel: threading.Event,
    on_progress: ProgressCallback,
) -> LoadPointResult:
    """Run the load point on this loop; abandon its requests as soon as `cancel` is set."""
    task = asyncio.ensure_future(arun_load_point(harness, point, on_progress=on_progress))
    while not task.done():
        if cancel.is_set():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            raise JobCancelled
        await asyncio.wait({task}, timeout=CANCEL_POLL_S)
    return task.result()


class AttemptRun:
    """One claimed attempt on this runner; `execute` returns the finish state and reason."""

    def __init__(
        self,
        runner: JobRunner,
        attempt_id: int,
        plan: JobPlan,
        reporter: Reporter,
        cancel: threading.Event,
    ) -> None:
        self.runner = runner
        self.attempt_id = attempt_id
        self.plan = plan
        self.reporter = reporter
        self.cancel = cancel

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise JobCancelled

    def _launch(self) -> EngineProcess:
        adapter = get_engine_adapter(self.plan.adapter_slug)
        launch = self.plan.launch
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        with launch.log_path.open("a") as log:
            log.write(
                f"[stackselect-runner {stackselect_runner.__version__}] attempt "
                f"{self.attempt_id}: launching {adapter.slug} for {launch.served_name} "
                f"on {launch.base_url}\n"
            )
        self.reporter.update(None, 0, 0, f"starting {adapter.slug}")
        try:
            return adapter.start(launch)
        except OSError as exc:
            raise EngineStartError(f"cannot launch {adapter.slug}: {exc}") from exc

    def _measure(self, point: LoadPoint, engine: Mapping[str, Any]) -> LoadPointResult:
        out = self.runner.terminal
        label = point.label()
        show = progress_printer(label, out)

        def on_progress(done: int, total: int) -> None:
            show(done, total)
            self.reporter.update(point.index, done, total, f"{label}: {done}/{total} requests")

        self.reporter.update(point.index, 0, len(self.plan.harness.requests), f"{label}: warm-up")
        result = asyncio.run(
            _measure_until_cancelled(self.plan.harness, point, self.cancel, on_progress)
        )
        end_progress_line(out)
        print(summary_line(result), file=out, flush=True)
        self._upload(point, result, engine)
        self.reporter.flush()
        return result

    def _upload(self, point: LoadPoint, result: LoadPointResult, engine: Mapping[str, Any]) -> None:
        chunks = result_uploads(
            self.attempt_id, result, engine, self.runner.settings.upload_chunk_records
        )
        for key, body in chunks:
            try:
                self.runner.api.upload_results(self.attempt_id, body, key)
            except ApiError as exc:
                raise JobFailed(f"uploading {point.label()} failed: {exc.describe()}") from exc

    @staticmethod
    def _check_load_point(
        point: LoadPoint, result: LoadPointResult, process: EngineProcess
    ) -> None:
        """A dead engine or a load point without one good request ends the attempt."""
        if not process.running:
            raise JobFailed(
                f"engine exited with code {process.popen.returncode} during {point.label()}:\n"
                f"{process.log_tail()}"
            )
        if not any(record.ok for record in result.records):
            first_error = result.records[0].error if result.records else "no requests"
            raise JobFailed(
                f"{point.label()}: all {len(result.records)} requests failed ({first_error})"
            )

    def execute(self) -> tuple[Outcome, str]:
        process = self._launch()
        try:
            process.wait_ready(self.runner.settings.engine_ready_timeout_s, interrupt=self.cancel)
            self._check_cancel()
            engine = {
                "version": process.adapter.version(self.plan.launch),
                "effective_config": {
                    **self.plan.effective_config(),
                    **process.adapter.effective_config(self.plan.launch),
                },
                # Where it ran, not what it was: kept out of the identity's engine config.
                "visible_devices": dict(self.plan.launch.env),
            }
            if self.plan.model_store:
                # Where this machine keeps the weights: the identity names the model instead.
                engine["model_store"] = dict(self.plan.model_store)
            if self.plan.search is not None:
                outcome, reason = self._search(self.plan.search, process, engine)
            else:
                for point in self.plan.load_points:
                    self._check_cancel()
                    result = self._measure(point, engine)
                    self._check_load_point(point, result, process)
                outcome = Outcome.SUCCEEDED
                reason = f"measured {len(self.plan.load_points)} load point(s)"
            return outcome, reason + self._quality_probe()
        finally:
            process.stop(grace_s=self.runner.settings.engine_stop_grace_s)

    def _quality_probe(self) -> str:
        """Send the probe's prompts to the engine just measured and upload what it said."""
        spec = self.plan.quality
        if spec is None:
            return ""
        self._check_cancel()
        self.reporter.update(None, 0, len(spec.prompts), "quality probe")
        launch = self.plan.launch
        result = run_probe(launch.base_url, launch.served_name, spec)
        try:
            self.runner.api.upload_quality(self.attempt_id, result.payload(spec))
        except ApiError as exc:
            raise JobFailed(f"uploading the quality probe failed: {exc.describe()}") from exc
        return f"; quality probe: {answered(result.outputs)}/{len(spec.prompts)} answered"

    def _search(
        self, search: SearchSpec, process: EngineProcess, engine: Mapping[str, Any]
    ) -> tuple[Outcome, str]:
        """Probe the rates the search asks for; each probe is uploaded as load point `index`."""
        state = RateSearch(search)
        while (rate := state.next_rate()) is not None:
            self._check_cancel()
            point = LoadPoint(rate_rps=rate, index=len(state.probes))
            result = self._measure(point, engine)
            self._check_load_point(point, result, process)
            verdict = records_verdict(result.records, search.slo)
            if verdict.passed is None:
                raise JobFailed(
                    f"{point.label()}: the SLO verdict is undefined: no completed request "
                    "measured every targeted latency"
                )
            probe = state.record(rate, verdict)
            print(probe.describe(), file=self.runner.terminal, flush=True)
            done = len(result.records)
            self.reporter.update(point.index, done, done, probe.describe())
        return Outcome.SUCCEEDED, state.result().describe()


class JobRunner:
    """Runs attempts for one runner, several at once when `devices` has GPUs for them.

    `heartbeat` is the process's thread (None: one per job). `devices` hands each job its own
    GPUs before the claim, so a job never waits for devices while holding a lease.
    """

    def __init__(
        self,
        api: RunnerApiClient,
        settings: RunnerSettings,
        *,
        heartbeat: Heartbeat | None = None,
        heartbeat_interval_s: float = DEFAULT_HEARTBEAT_INTERVAL_S,
        terminal: TextIO | None = None,
        devices: DevicePool | None = None,
    ) -> None:
        self.api = api
        self.settings = settings
        self.heartbeat = heartbeat
        self.heartbeat_interval_s = heartbeat_interval_s
        self.terminal = terminal or sys.stderr
        self.devices = devices

    def _claim(self, attempt_id: int) -> dict[str, Any] | Outcome:
        try:
            claimed = self.api.claim(attempt_id)
            if isinstance(claimed, Mapping) and "engine" in claimed:
                return dict(claimed)
            return self.api.job_spec(attempt_id)
        except Conflict as conflict:
            logger.info("attempt %s not claimed (%s): dropped", attempt_id, conflict.code)
            return Outcome.DROPPED
        except ApiUnreachable as exc:
            logger.warning("attempt %s: claim unanswered: %s", attempt_id, exc)
            return Outcome.CLAIM_UNREACHABLE
        except ApiError as exc:
            logger.error("attempt %s: claim refused: %s", attempt_id, exc.describe())
            return Outcome.DROPPED

    @contextmanager
    def _tracked(self, attempt_id: int) -> Iterator[tuple[Heartbeat, threading.Event]]:
        """Heartbeats carry this attempt; a per-job thread starts only once it is tracked."""
        heartbeat = self.heartbeat or Heartbeat(self.api, self.heartbeat_interval_s)
        cancel = heartbeat.track(attempt_id)
        if heartbeat is not self.heartbeat:
            heartbeat.start()
        try:
            yield heartbeat, cancel
        finally:
            if heartbeat is self.heartbeat:
                heartbeat.untrack(attempt_id)
            else:
                heartbeat.stop()

    def run(self, attempt_id: int, gpu_count: int | None = None) -> Outcome:
        """Wait for `gpu_count` free devices (when this runner pins devices), then run."""
        if self.devices is None or gpu_count is None:
            return self._run_pinned(attempt_id, {})
        try:
            devices = self.devices.acquire(gpu_count)
        except ValueError as exc:
            logger.error("attempt %s: %s; dropped", attempt_id, exc)
            return Outcome.DROPPED
        assert devices is not None  # no timeout: acquire waits until the devices are free
        try:
            return self._run_pinned(attempt_id, self.devices.env(devices))
        finally:
            self.devices.release(devices)

    def _run_pinned(self, attempt_id: int, env: Mapping[str, str]) -> Outcome:
        claimed = self._claim(attempt_id)
        if isinstance(claimed, Outcome):
            return claimed
        pinned = " ".join(f"{key}={value}" for key, value in env.items())
        print(
            f"attempt {attempt_id}: claimed job {claimed.get('job_id')}"
            + (f" on {pinned}" if pinned else ""),
            file=self.terminal,
        )
        with self._tracked(attempt_id) as (heartbeat, cancel):
            outcome, reason = self._execute(attempt_id, claimed, heartbeat, cancel, env)
        self._finish(attempt_id, outcome, reason)
        return outcome

    def _execute(
        self,
        attempt_id: int,
        spec: Mapping[str, Any],
        heartbeat: Heartbeat,
        cancel: threading.Event,
        env: Mapping[str, str],
    ) -> tuple[Outcome, str]:
        try:
            plan = JobPlan.from_spec(spec, self.settings, attempt_id, env)
        except (ModelMissing, ConfigError) as exc:
            return Outcome.FAILED, str(exc)
        except (ValueError, TypeError) as exc:
            return Outcome.FAILED, f"invalid job spec: {exc}"
        shipper = LogShipper(self.api, attempt_id, plan.launch.log_path)
        with Reporter(
            self.api, attempt_id, shipper, heartbeat, self.settings.report_interval_s
        ) as reporter:
            try:
                return AttemptRun(self, attempt_id, plan, reporter, cancel).execute()
            except JobCancelled:
                return Outcome.CANCELLED, "cancelled on request"
            except EngineStartError as exc:
                return Outcome.FAILED, f"engine failed to start: {exc}"
            except (JobFailed, ValueError) as exc:
                return Outcome.FAILED, str(exc)
            except Exception as exc:  # a runner bug must still end the attempt, not hang it
                logger.exception("attempt %s: unexpected runner error", attempt_id)
                return Outcome.FAILED, f"runner error: {type(exc).__name__}: {exc}"

    def _finish(self, attempt_id: int, outcome: Outcome, reason: str) -> None:
        print(f"attempt {attempt_id}: {outcome}: {reason.splitlines()[0]}", file=self.terminal)
        try:
            self.api.finish(attempt_id, outcome.value, clip_reason(reason))
        except Conflict as exc:
            # Reaped as lost or finished elsewhere: the server has already moved on.
            logger.info("attempt %s: finish not needed: %s", attempt_id, exc.describe())
        except ApiError as exc:
            # The lease will expire and the server's reaper decides what happens next.
            logger.error("attempt %s: finish %s not recorded: %s", attempt_id, outcome, exc)
