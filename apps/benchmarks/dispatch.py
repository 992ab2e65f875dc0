"""Routing, dispatch, terminal moves and the reaper: the server side of "exactly once".

Jobs are sent by task name to their pool queue on commit; the web app never imports runner code.
A job goes only to a runner whose probe reports the job's engine adapter (the stack's own engine
for a measured plan, `simulated` for a dry run) in a version of the stack's release series
(stackselect_domain.engine_versions), for a real engine the job's model in its model store
(`engine.model_key`; the simulated engine needs no checkpoint), for a speculating job the draft
model declared in that store for that model and the engine frontend it needs, and enough GPUs
of its accelerator: each (hardware, engine, series, model, draft model, frontend) has its own
pool queue. A job no runner
can take is `waiting_for_runner` with a reason naming what is missing, re-evaluated when
runners enroll, probe or come back online, and by the reaper. Follow-up work (plan state,
audit) happens only on the move into a terminal state, found by a conditional update's row
count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from apps.audit.services import Actor, AuditEntry, audit_record, audit_record_many
from apps.benchmarks.choices import (
    ATTEMPT_LEASED,
    JOB_PENDING,
    JOB_TERMINAL,
    AttemptState,
    JobState,
    PlanState,
)
from apps.benchmarks.engine_spec import SIMULATED_ADAPTER
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt
from apps.catalog.models import Engine
from apps.runners.labels import JobNeeds, pool_queue, unfit_reason
from apps.runners.models import Runner
from apps.runners.selectors import accelerator_names, is_online, labels_of
from config.celery import app as celery_app

RUN_ATTEMPT_TASK = "stackselect.runner.run_attempt"
DISPATCHER = Actor.system("dispatcher")
REAPER = Actor.system("reaper")


def publish_attempt(*, attempt_id: int, queue: str, gpu_count: int) -> None:
    """Put the attempt on its queue; call it on commit so a runner never sees an unsaved row.

    `gpu_count` lets a multi-GPU runner reserve the job's devices before it claims the job.
    """
    kwargs = {"attempt_id": attempt_id, "gpu_count": gpu_count}
    celery_app.send_task(RUN_ATTEMPT_TASK, kwargs=kwargs, queue=queue)
    JobAttempt.objects.filter(pk=attempt_id).update(published_at=timezone.now())


def _publish_on_commit(attempt: JobAttempt) -> None:
    attempt_id, queue, gpu_count = attempt.pk, attempt.queue, attempt.job.gpu_count
    # robust: a broker outage is logged, not raised; the reaper sends unpublished attempts again.
    transaction.on_commit(
        lambda: publish_attempt(attempt_id=attempt_id, queue=queue, gpu_count=gpu_count),
        robust=True,
    )


def job_needs(job: BenchmarkJob) -> JobNeeds:
    """The hardware, the engine adapter (the stack's own engine, or `simulated`) and, for a real
    engine, the catalog release whose series the runner's installed engine must be of, the
    model its store must hold (the simulated engine needs no checkpoint) and, when the job
    speculates, the draft model its store must hold for that model and the frontend set by
    engine_spec.real_engine."""
    adapter = str(job.engine.get("adapter") or "")
    if adapter == SIMULATED_ADAPTER:
        return JobNeeds(job.accelerator, job.gpu_count, adapter)
    release = str(job.stack.get("engine_version") or "")
    model = str(job.engine.get("model_key") or "")
    options = job.engine.get("options") or {}
    speculative = options.get("speculative") or {}
    return JobNeeds(
        job.accelerator,
        job.gpu_count,
        adapter,
        release,
        model,
        draft_model=str(speculative.get("draft_model") or ""),
        frontend=str(options.get("frontend") or ""),
    )


def runner_unfit_reason(runner: Runner, job: BenchmarkJob) -> str | None:
    """Why this runner cannot take the job (None: it can)."""
    return unfit_reason(labels_of(runner), job_needs(job))


def gpus_in_use(runner_ids: list[int] | None = None) -> dict[int, int]:
    """GPUs held by each runner's leased attempts: a runner runs jobs side by side while
    their GPU counts fit its own."""
    leased = JobAttempt.objects.filter(state__in=ATTEMPT_LEASED, runner__isnull=False)
    if runner_ids is not None:
        leased = leased.filter(runner_id__in=runner_ids)
    rows = leased.values("runner_id").annotate(gpus=Sum("job__gpu_count"))
    return {row["runner_id"]: int(row["gpus"] or 0) for row in rows}


def has_room(runner: Runner, gpu_count: int, in_use: dict[int, int]) -> bool:
    return in_use.get(runner.pk, 0) + gpu_count <= labels_of(runner).gpu_count


def _engine_names(slugs: set[str]) -> dict[str, str]:
    names = dict(Engine.objects.filter(slug__in=slugs).values_list("slug", "name"))
    return {
        slug: "the simulated engine" if slug == SIMULATED_ADAPTER else names.get(slug, slug)
        for slug in slugs
    }


@dataclass(frozen=True)
class Fleet:
    """What routing reads about the fleet, fetched once for any number of pending jobs:
    the active runners by team and the display names of the accelerators and engines."""

    runners: dict[int, list[Runner]]
    accelerators: dict[str, str]
    engines: dict[str, str]

    @classmethod
    def for_jobs(cls, jobs: list[BenchmarkJob]) -> Fleet:
        runners: dict[int, list[Runner]] = {job.team_id: [] for job in jobs}
        active = Runner.objects.filter(team_id__in=runners, revoked_at__isnull=True)
        for runner in active.order_by("name"):
            runners[runner.team_id].append(runner)
        return cls(
            runners=runners,
            accelerators=accelerator_names({job.accelerator for job in jobs}),
            engines=_engine_names({job_needs(job).engine for job in jobs}),
        )

    def fitting(self, job: BenchmarkJob) -> list[Runner]:
        """Active runners of the job's team whose probe reports its engine and hardware."""
        needs = job_needs(job)
        runners = self.runners.get(job.team_id, [])
        return [runner for runner in runners if unfit_reason(labels_of(runner), needs) is None]


def routing_verdict(
    job: BenchmarkJob, *, now: datetime | None = None, fleet: Fleet | None = None
) -> tuple[str, str]:
    """Queued when an online runner of the team has the engine and the hardware, else waiting
    with why: which runners would qualify, and what each of the others lacks."""
    fleet = fleet or Fleet.for_jobs([job])
    needs = job_needs(job)
    name = fleet.accelerators.get(job.accelerator, job.accelerator)
    hardware = f"{job.gpu_count} x {name} ({job.accelerator})"
    engine = fleet.engines.get(needs.engine, needs.engine)
    wanted = needs.wanted(engine, hardware)
    runners = fleet.runners.get(job.team_id, [])
    why_not = {
        runner.name: unfit_reason(
            labels_of(runner), needs, engine_name=engine, accelerator_name=name
        )
        for runner in runners
    }
    fitting = [runner for runner in runners if why_not[runner.name] is None]
    others = "; ".join(f"{runner} {reason}" for runner, reason in why_not.items() if reason)
    if not fitting:
        return (
            JobState.WAITING_FOR_RUNNER,
            f"No online runner has {wanted}. "
            + (f"Runners of this team: {others}. " if others else "No runner is enrolled. ")
            + "Install the engine (and add the model to its store: `stackselect-runner models "
            f"add`{_draft_hint(needs)}) on a runner with that hardware, or enroll one on the "
            "Runners page.",
        )
    online = [runner for runner in fitting if is_online(runner, now=now)]
    if not online:
        names = ", ".join(runner.name for runner in fitting)
        return (
            JobState.WAITING_FOR_RUNNER,
            f"No online runner has {wanted}: the runners that would qualify are offline: {names}.",
        )
    not_fitting = f" Not the others: {others}." if others else ""
    return (
        JobState.QUEUED,
        f"Queued for {wanted} on the runners that have it: {_names(fitting)}.{not_fitting}",
    )


def _draft_hint(needs: JobNeeds) -> str:
    if not needs.draft_model:
        return ""
    return (
        f"; the draft model too: `stackselect-runner models add {needs.draft_model} "
        f"/path/to/draft --draft-for {needs.model}`"
    )


def _names(runners: Sequence[Runner], shown: int = 5) -> str:
    """The runners' names, the first few of a large fleet. A queued job's reason names the
    runners that qualify, online or not, so that runners going and coming back leave it as it
    is (no row rewritten per pending job at every comeback)."""
    names = ", ".join(runner.name for runner in runners[:shown])
    return names + (f" and {len(runners) - shown} more" if len(runners) > shown else "")


def _retry_notes(job_ids: list[int]) -> dict[int, str]:
    """For each job with a lost attempt, the note on its latest one (one query for all; a job
    has at most its plan's few attempts)."""
    lost = JobAttempt.objects.filter(job_id__in=job_ids, state=AttemptState.LOST)
    notes = {}
    for job, number, reason in lost.order_by("number").values_list("job_id", "number", "reason"):
        notes[job] = f"Attempt {number} lost ({reason}) Retrying. "
    return notes


Route = tuple[BenchmarkJob, str, str]  # a pending job, its new state and its new reason


def _apply_routes(routes: Sequence[Route]) -> None:
    """Set each pending job's state and reason; a job no longer in the state it was read in has
    moved on and is left alone. Each job whose state moves gets its own audit event (its
    history reads as before), all appended with one INSERT.

    One UPDATE per (old state, new state, reason) shared by the jobs, so moving thousands of
    jobs costs the queries of moving one. Several jobs are locked first, in id order (as
    `plan_cancel` does), so two reroutes at once cannot deadlock and every locked job still in
    its old state is updated; a single job's conditional UPDATE says by itself if it moved.
    """
    changes = [
        (job, state, reason)
        for job, state, reason in routes
        if (job.state, job.state_reason) != (state, reason)
    ]
    if not changes:
        return
    with transaction.atomic(savepoint=False):
        if len(changes) > 1:
            locked = BenchmarkJob.objects.select_for_update().filter(
                pk__in=[job.pk for job, _, _ in changes]
            )
            current = dict(locked.order_by("pk").values_list("pk", "state"))
            changes = [change for change in changes if current.get(change[0].pk) == change[0].state]
        groups: dict[tuple[str, str, str], list[BenchmarkJob]] = {}
        for job, state, reason in changes:
            groups.setdefault((job.state, state, reason), []).append(job)
        entries = []
        for (before, state, reason), jobs in groups.items():
            rows = BenchmarkJob.objects.filter(pk__in=[job.pk for job in jobs], state=before)
            if not rows.filter(state__in=JOB_PENDING).update(state=state, state_reason=reason):
                continue
            if state != before:
                after = {"state": state, "state_reason": reason}
                entries += [
                    AuditEntry(
                        DISPATCHER,
                        f"job.{state}",
                        job,
                        team=job.team,
                        before={"state": before},
                        after=after,
                    )
                    for job in jobs
                ]
            for job in jobs:
                job.state, job.state_reason = state, reason
        audit_record_many(entries)


def job_route(
    job: BenchmarkJob, *, fleet: Fleet | None = None, retry_note: str | None = None
) -> None:
    """Set a pending job's state and reason from the fleet; a job that moved on is left alone.

    `fleet` (read once for many jobs) and `retry_note` (known: a first attempt has none) save
    the queries that would read them again for this job.
    """
    state, reason = routing_verdict(job, fleet=fleet)
    if retry_note is None:
        retry_note = _retry_notes([job.pk]).get(job.pk, "")
    _apply_routes([(job, state, retry_note + reason)])


def attempt_dispatch(job: BenchmarkJob, *, number: int, fleet: Fleet | None = None) -> JobAttempt:
    """Create attempt `number` and send it to the job's pool queue once the transaction commits
    (`fleet`: what routing reads, read once for the jobs of a plan)."""
    attempt = JobAttempt.objects.create(
        job=job, number=number, queue=pool_queue(job_needs(job), team_id=job.team_id)
    )
    audit_record(
        actor=DISPATCHER,
        action="attempt.dispatch",
        obj=attempt,
        team=job.team,
        after={"job_id": job.pk, "number": number, "queue": attempt.queue},
    )
    job_route(job, fleet=fleet, retry_note="" if number == 1 else None)
    _publish_on_commit(attempt)
    return attempt


def pending_jobs_reroute(*, team_id: int | None = None, waiting_only: bool = False) -> int:
    """Re-evaluate every pending job (of one team); returns how many were looked at.

    `waiting_only` is for a runner's comeback: a runner coming online can only make waiting
    jobs runnable, and a queued job's reason does not depend on who is online, so the queued
    jobs are not read at all (at 2,000 of them, every comeback read and rewrote them all).

    The fleet, the retry notes and the verdict of each (team, needs) are read once for all the
    jobs, and jobs that get the same state and reason are updated together, so a reap or a
    runner's comeback costs a few queries plus one per distinct verdict (and per retried job,
    whose reason names its lost attempt), however many jobs move.
    """
    states = {JobState.WAITING_FOR_RUNNER} if waiting_only else JOB_PENDING
    jobs = BenchmarkJob.objects.filter(state__in=states).select_related("team")
    if team_id is not None:
        jobs = jobs.filter(team_id=team_id)
    jobs = list(jobs)
    if not jobs:
        return 0
    fleet = Fleet.for_jobs(jobs)
    notes = _retry_notes([job.pk for job in jobs])
    now = timezone.now()
    verdicts: dict[tuple[int, JobNeeds], tuple[str, str]] = {}
    routes = []
    for job in jobs:
        key = (job.team_id, job_needs(job))
        if key not in verdicts:
            verdicts[key] = routing_verdict(job, now=now, fleet=fleet)
        state, reason = verdicts[key]
        routes.append((job, state, notes.get(job.pk, "") + reason))
    _apply_routes(routes)
    return len(jobs)


def plan_refresh(plan_id: int) -> None:
    """When every job is terminal, the plan becomes terminal too (once)."""
    plan = BenchmarkPlan.objects.select_for_update().get(pk=plan_id)
    states = list(plan.jobs.values_list("state", flat=True))
    if plan.state != PlanState.RUNNING or not all(state in JOB_TERMINAL for state in states):
        return
    if all(state == JobState.SUCCEEDED for state in states):
        final = PlanState.SUCCEEDED
    elif JobState.SUCCEEDED in states:
        final = PlanState.PARTIAL
    elif JobState.FAILED in states:
        final = PlanState.FAILED
    else:
        final = PlanState.CANCELLED
    now = timezone.now()
    if BenchmarkPlan.objects.filter(pk=plan.pk, state=PlanState.RUNNING).update(
        state=final, finished_at=now
    ):
        audit_record(
            actor=DISPATCHER,
            action=f"plan.{final}",
            obj=plan,
            team=plan.team,
            before={"state": PlanState.RUNNING},
            after={"state": final},
        )


def job_finish(job: BenchmarkJob, *, state: str, reason: str, actor: Actor) -> bool:
    """Move a job into a terminal state; True only for the call that made the move."""
    now = timezone.now()
    moved = (
        BenchmarkJob.objects.filter(pk=job.pk)
        .exclude(state__in=JOB_TERMINAL)
        .update(state=state, state_reason=reason, finished_at=now)
    )
    if not moved:
        return False
    JobAttempt.objects.filter(job=job, state=AttemptState.DISPATCHED).update(
        state=AttemptState.CANCELLED if state == JobState.CANCELLED else AttemptState.SUPERSEDED,
        reason=f"The job {state}.",
        finished_at=now,
    )
    audit_record(
        actor=actor,
        action=f"job.{state}",
        obj=job,
        team=job.team,
        before={"state": job.state},
        after={"state": state, "state_reason": reason},
    )
    job.state, job.state_reason, job.finished_at = state, reason, now
    plan_refresh(job.plan_id)
    return True


# ---------------------------------------------------------------- the reaper


@dataclass
class ReapReport:
    lost: int = 0
    redispatched: int = 0
    failed: int = 0
    cancelled: int = 0
    republished: int = 0


def _lost_reason(attempt: JobAttempt) -> str:
    runner = attempt.runner.name if attempt.runner else "its runner"
    expired = attempt.lease_expires_at.isoformat(timespec="seconds")
    return f"Lease expired at {expired}: {runner} stopped sending heartbeats."


def _reap_one(attempt_id: int, now: datetime, report: ReapReport) -> None:
    with transaction.atomic():
        attempt = (
            JobAttempt.objects.select_related("runner", "job__plan", "job__team")
            .filter(pk=attempt_id, state__in=ATTEMPT_LEASED, lease_expires_at__lt=now)
            .first()
        )
        if attempt is None:
            return
        reason = _lost_reason(attempt)
        if not JobAttempt.objects.filter(
            pk=attempt.pk, state__in=ATTEMPT_LEASED, lease_expires_at__lt=now
        ).update(state=AttemptState.LOST, reason=reason, finished_at=now):
            return
        report.lost += 1
        job = (
            BenchmarkJob.objects.select_for_update()
            .select_related("plan", "team")
            .get(pk=attempt.job_id)
        )
        audit_record(
            actor=REAPER,
            action="attempt.lost",
            obj=attempt,
            team=job.team,
            before={"state": attempt.state},
            after={"state": AttemptState.LOST, "reason": reason},
        )
        max_attempts = job.plan.max_attempts
        if job.cancel_requested:
            job_finish(job, state=JobState.CANCELLED, reason=f"Cancelled. {reason}", actor=REAPER)
            report.cancelled += 1
        elif attempt.number >= max_attempts:
            final = f"Attempt {attempt.number} of {max_attempts} lost. {reason}"
            job_finish(job, state=JobState.FAILED, reason=final, actor=REAPER)
            report.failed += 1
        elif BenchmarkJob.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.QUEUED
        ):
            job.state = JobState.QUEUED
            attempt_dispatch(job, number=attempt.number + 1)
            report.redispatched += 1


def _republish_stale_dispatches(now: datetime, report: ReapReport) -> None:
    """Send again an attempt that an online runner with room should have taken long ago.

    A broker that lost its messages (Redis restarted without persistence) would otherwise
    strand the job; a duplicate is harmless, since the second claim is refused.
    """
    stale = now - timedelta(seconds=settings.RUNNER_REDISPATCH_AFTER_S)
    attempts = JobAttempt.objects.filter(
        state=AttemptState.DISPATCHED, job__cancel_requested=False
    ).filter(Q(published_at__lt=stale) | Q(published_at__isnull=True, dispatched_at__lt=stale))
    attempts = list(attempts.select_related("job"))
    if not attempts:
        return
    in_use = gpus_in_use()
    fleet = Fleet.for_jobs([attempt.job for attempt in attempts])
    for attempt in attempts:
        job = attempt.job
        if not any(
            is_online(runner, now=now) and has_room(runner, job.gpu_count, in_use)
            for runner in fleet.fitting(job)
        ):
            continue
        with transaction.atomic():
            if JobAttempt.objects.filter(
                pk=attempt.pk, state=AttemptState.DISPATCHED, published_at=attempt.published_at
            ).update(published_at=now):
                _publish_on_commit(attempt)
                report.republished += 1


def reap_expired_leases(*, now: datetime | None = None) -> ReapReport:
    """Lost attempts are retried up to the plan's maximum, then their job fails; idempotent."""
    now = now or timezone.now()
    report = ReapReport()
    expired = JobAttempt.objects.filter(state__in=ATTEMPT_LEASED, lease_expires_at__lt=now)
    for attempt_id in list(expired.values_list("id", flat=True)):
        _reap_one(attempt_id, now, report)
    _republish_stale_dispatches(now, report)
    pending_jobs_reroute()
    return report


def lease_deadline(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.RUNNER_LEASE_SECONDS)
