"""What a runner does to an attempt: claim, heartbeat, progress, log, results, finish.

A runner reaches only its own team's attempts (another team's look missing: 404), claims only
attempts its labels fit (403), and after the claim only the attempts it holds. The claim is a
conditional update, so a second delivery or a superseded attempt is refused (409). A runner
holds several attempts at once while their GPU counts fit its GPUs (a claim beyond that: 409).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Concat
from django.utils import timezone
from stackselect_domain.quality import score_outputs

from apps.audit.services import Actor, audit_record
from apps.benchmarks.choices import (
    ATTEMPT_FINISH_STATES,
    ATTEMPT_LEASED,
    JOB_PENDING,
    AttemptState,
    JobState,
    PlanMode,
)
from apps.benchmarks.dispatch import (
    gpus_in_use,
    has_room,
    job_finish,
    lease_deadline,
    pending_jobs_reroute,
    runner_unfit_reason,
)
from apps.benchmarks.models import BenchmarkJob, JobAttempt, JobLog, QualityResult, ResultUpload
from apps.benchmarks.quality import clean_evaluation, clean_output
from apps.benchmarks.results import UploadError, gunzip_limited, parse_upload
from apps.benchmarks.search import load_point_limit
from apps.benchmarks.selectors import JsonArrayLength
from apps.benchmarks.signals import result_uploaded
from apps.core.errors import ConflictError, NotFoundError
from apps.runners.models import Runner
from apps.runners.selectors import runner_queues
from apps.runners.services import runner_heartbeat_touch

LOG_MAX_CHARS = 2_000_000
MAX_IDEMPOTENCY_KEY = 200
PROGRESS_KEYS = ("load_point", "done", "total", "message")

_CONFLICT_CODES = {
    AttemptState.CLAIMED: "already_claimed",
    AttemptState.RUNNING: "already_claimed",
    AttemptState.SUPERSEDED: "superseded",
    AttemptState.CANCELLED: "cancelled",
}


class LogOffsetMismatch(ConflictError):
    def __init__(self, expected_offset: int) -> None:
        super().__init__(
            f"The log is {expected_offset} characters long; append at that offset.",
            code="offset_mismatch",
        )
        self.expected_offset = expected_offset


def _conflict(attempt: JobAttempt) -> ConflictError:
    code = _CONFLICT_CODES.get(attempt.state, "finished")
    return ConflictError(f"Attempt {attempt.pk} is {attempt.state}: drop it.", code=code)


def _team_attempt(runner: Runner, attempt_id: int) -> JobAttempt:
    # The plan's request schedule (up to 20,000 requests of JSON) is read only by the job
    # spec; a heartbeat or an upload decoding it every time would spend most of its time there.
    attempt = (
        JobAttempt.objects.select_related("job__plan", "job__team")
        .defer("job__plan__requests")
        .filter(pk=attempt_id, job__team_id=runner.team_id)
        .first()
    )
    if attempt is None:
        raise NotFoundError("No such attempt.")
    return attempt


def _own_attempt(runner: Runner, attempt_id: int) -> JobAttempt:
    attempt = _team_attempt(runner, attempt_id)
    if attempt.runner_id != runner.pk:
        raise NotFoundError("No such attempt of this runner.")
    return attempt


def attempt_of_runner(*, runner: Runner, attempt_id: int) -> JobAttempt:
    """An attempt this runner claimed (for the spec); anything else is 404."""
    return _own_attempt(runner, attempt_id)


@transaction.atomic
def attempt_claim(*, runner: Runner, attempt_id: int) -> JobAttempt:
    """dispatched -> claimed for this runner, with a lease; anything else is refused."""
    attempt = _team_attempt(runner, attempt_id)
    job = attempt.job
    unfit = runner_unfit_reason(runner, job)
    if unfit is not None:
        raise PermissionDenied(
            f"This runner's labels do not fit the job ({job.engine.get('adapter')} on "
            f"{job.gpu_count} x {job.accelerator}): it {unfit}."
        )
    # Serialise this runner's claims, so two at once cannot both take its last free GPU.
    Runner.objects.select_for_update().filter(pk=runner.pk).first()
    if attempt.state == AttemptState.DISPATCHED and not has_room(
        runner, job.gpu_count, gpus_in_use([runner.pk])
    ):
        raise ConflictError(
            f"This runner's GPUs are taken by its other attempts; {job.gpu_count} more do not fit.",
            code="runner_full",
        )
    now = timezone.now()
    claimed = JobAttempt.objects.filter(
        pk=attempt.pk, state=AttemptState.DISPATCHED, job__cancel_requested=False
    ).update(
        state=AttemptState.CLAIMED,
        runner=runner,
        claimed_at=now,
        lease_expires_at=lease_deadline(now),
    )
    if not claimed:
        attempt.refresh_from_db()
        if attempt.state == AttemptState.DISPATCHED:  # dispatched, but its job is cancelled
            raise ConflictError("The job was cancelled: drop it.", code="cancelled")
        raise _conflict(attempt)
    JobLog.objects.get_or_create(attempt=attempt)
    reason = f"Attempt {attempt.number} claimed by runner {runner.name}."
    BenchmarkJob.objects.filter(pk=job.pk, state__in=JOB_PENDING).update(
        state=JobState.RUNNING, state_reason=reason, started_at=job.started_at or now
    )
    audit_record(
        actor=Actor.for_runner(runner),
        action="attempt.claim",
        obj=attempt,
        team=job.team,
        before={"state": AttemptState.DISPATCHED},
        after={"state": AttemptState.CLAIMED, "runner_id": runner.pk},
    )
    attempt.refresh_from_db()
    return attempt


def _start_if_claimed(attempt: JobAttempt, now: datetime, runner: Runner) -> None:
    """claimed -> running on the first sign of work, audited like every other transition."""
    started = JobAttempt.objects.filter(pk=attempt.pk, state=AttemptState.CLAIMED).update(
        state=AttemptState.RUNNING, started_at=now
    )
    if started:
        audit_record(
            actor=Actor.for_runner(runner),
            action="attempt.start",
            obj=attempt,
            team=attempt.job.team,
            before={"state": AttemptState.CLAIMED},
            after={"state": AttemptState.RUNNING},
        )


def _clean_progress(progress: Any) -> dict[str, Any]:
    if not isinstance(progress, dict):
        raise ValidationError({"progress": "Send an object {load_point, done, total, message}."})
    cleaned = {key: progress.get(key) for key in PROGRESS_KEYS}
    for key in ("done", "total"):
        value = cleaned[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValidationError({key: "Must be a whole number."})
    cleaned["message"] = str(cleaned["message"] or "")[:500]
    return cleaned


def _store_progress(attempt: JobAttempt, progress: Any, now: datetime, runner: Runner) -> None:
    cleaned = _clean_progress(progress)
    cleaned.update(attempt=attempt.number, updated_at=now.isoformat(timespec="seconds"))
    BenchmarkJob.objects.filter(pk=attempt.job_id).update(progress=cleaned)
    _start_if_claimed(attempt, now, runner)


@dataclass(frozen=True)
class AttemptBeat:
    """The answer for one attempt of a heartbeat: stop it, or its new lease."""

    attempt_id: int
    cancel: bool
    lease_expires_at: datetime | None


@dataclass(frozen=True)
class HeartbeatAnswer:
    """`attempts` answers each attempt sent; `cancel`/`lease_expires_at` repeat the answer
    for a single attempt, for runners that send only `attempt_id`."""

    cancel: bool
    lease_expires_at: datetime | None
    queues: list[str]
    attempts: list[AttemptBeat]


def _beat_one(runner: Runner, attempt_id: int, progress: Any) -> AttemptBeat:
    attempt = _own_attempt(runner, attempt_id)
    now = timezone.now()
    lease = lease_deadline(now)
    extended = JobAttempt.objects.filter(
        pk=attempt.pk, runner=runner, state__in=ATTEMPT_LEASED
    ).update(lease_expires_at=lease)
    if extended and progress is not None:
        _store_progress(attempt, progress, now, runner)
    elif extended:
        _start_if_claimed(attempt, now, runner)
    cancel = not extended or attempt.job.cancel_requested
    return AttemptBeat(attempt.pk, cancel, lease if extended else None)


def runner_heartbeat(
    *,
    runner: Runner,
    attempt_id: int | None = None,
    progress: Any = None,
    attempts: list[dict[str, Any]] | None = None,
) -> HeartbeatAnswer:
    """Extend the leases of the runner's attempts; `cancel` tells the runner to stop one.

    `attempts` ([{attempt_id, progress}]) carries every job of a runner that runs several at
    once; without it, the single `attempt_id` (and its progress) is the one beat.
    """
    if runner_heartbeat_touch(runner=runner):
        pending_jobs_reroute(team_id=runner.team_id, waiting_only=True)
    if attempts is None:
        attempts = [] if attempt_id is None else [{"attempt_id": attempt_id, "progress": progress}]
    with transaction.atomic():
        beats = [
            _beat_one(runner, entry["attempt_id"], entry.get("progress")) for entry in attempts
        ]
    single = beats[0] if len(beats) == 1 else None
    return HeartbeatAnswer(
        cancel=bool(single and single.cancel),
        lease_expires_at=single.lease_expires_at if single else None,
        queues=runner_queues(runner),
        attempts=beats,
    )


@transaction.atomic
def attempt_progress(*, runner: Runner, attempt_id: int, progress: Any) -> JobAttempt:
    attempt = _own_attempt(runner, attempt_id)
    if attempt.state not in ATTEMPT_LEASED:
        raise _conflict(attempt)
    _store_progress(attempt, progress, timezone.now(), runner)
    return attempt


@transaction.atomic
def attempt_log_append(*, runner: Runner, attempt_id: int, offset: Any, text: Any) -> int:
    """Append at exactly the stored length (characters); returns the next offset."""
    attempt = _own_attempt(runner, attempt_id)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError({"offset": "Must be a whole number >= 0."})
    if not isinstance(text, str):
        raise ValidationError({"text": "Must be a string."})
    text = text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL; same length
    if offset + len(text) > LOG_MAX_CHARS:
        raise ValidationError({"text": f"The log is full ({LOG_MAX_CHARS} characters)."})
    JobLog.objects.get_or_create(attempt=attempt)
    appended = JobLog.objects.filter(attempt=attempt, length=offset).update(
        text=Concat(F("text"), Value(text)), length=F("length") + len(text)
    )
    if not appended:
        raise LogOffsetMismatch(JobLog.objects.get(attempt=attempt).length)
    return offset + len(text)


def _replay(key: str, runner: Runner, attempt_id: int) -> ResultUpload | None:
    """The upload stored under this key in this runner's attempt; other attempts are not
    searched, so a key used elsewhere neither conflicts nor shows that it exists."""
    return ResultUpload.objects.filter(
        attempt_id=attempt_id,
        attempt__runner_id=runner.pk,
        attempt__job__team_id=runner.team_id,
        idempotency_key=key,
    ).first()


def _upload_attempt(runner: Runner, attempt_id: int, key: str) -> JobAttempt:
    """The runner's own attempt (else 404) as `_own_attempt` reads it, with in the same query
    `replay_id`, the upload it stored under `key` already (as `_replay` finds it), and
    `request_count`, the length of its plan's request schedule (the schedule left unread)."""
    stored = ResultUpload.objects.filter(attempt_id=OuterRef("pk"), idempotency_key=key)
    attempt = (
        JobAttempt.objects.select_related("job__plan", "job__team")
        .defer("job__plan__requests")
        .annotate(
            replay_id=Subquery(stored.values("pk")[:1]),
            request_count=JsonArrayLength("job__plan__requests"),
        )
        .filter(pk=attempt_id, job__team_id=runner.team_id)
        .first()
    )
    if attempt is None or attempt.runner_id != runner.pk:
        raise NotFoundError("No such attempt of this runner." if attempt else "No such attempt.")
    return attempt


def _store_body(upload: ResultUpload, body: bytes) -> None:
    """The gzip body into its row, on PostgreSQL as a binary parameter: Django binds parameters
    into the SQL text, so a bytea goes as hex for the server to parse (about 20 ms of a 1.1 MB
    body, against 2.5 ms as a binary parameter, measured 2026-12-03 on the bench machine)."""
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(ResultUpload._meta.db_table)
        sql = f"UPDATE {table} SET body = %b WHERE id = %s"
        try:  # the server-side binding cursor shares the connection, so the transaction
            with psycopg.Cursor(connection.connection) as cursor:
                cursor.execute(sql, [body, upload.pk])
        except psycopg.Error:
            transaction.set_rollback(True)  # psycopg's own errors bypass Django's wrapping
            raise
    upload.body = body


def _check_chunk_count(attempt: JobAttempt, load_point_index: int, chunk_count: int) -> None:
    """Every chunk of a load point states the same chunk_count, or completeness is undefined."""
    stated = (
        ResultUpload.objects.filter(attempt=attempt, load_point_index=load_point_index)
        .values_list("chunk_count", flat=True)
        .first()
    )
    if stated is not None and stated != chunk_count:
        raise UploadError(
            f"chunk_count: earlier chunks of load point {load_point_index} said {stated}"
        )


def result_upload(
    *,
    runner: Runner,
    attempt_id: int,
    idempotency_key: str,
    content_encoding: str,
    body: bytes,
) -> tuple[ResultUpload, bool]:
    """Store one gzip chunk of results; the same key again returns the stored one (False)."""
    key = (idempotency_key or "").strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError(
            {"Idempotency-Key": f"Send a key of 1 to {MAX_IDEMPOTENCY_KEY} chars."}
        )
    attempt = _upload_attempt(runner, attempt_id, key)
    if attempt.replay_id is not None:
        return ResultUpload.objects.get(pk=attempt.replay_id), False
    if attempt.state not in ATTEMPT_LEASED:
        raise _conflict(attempt)
    if content_encoding.strip().lower() != "gzip":
        raise ValidationError({"Content-Encoding": "Results must be sent gzip-compressed."})
    if len(body) > settings.BENCHMARK_UPLOAD_MAX_BYTES:
        raise UploadError(f"body: more than {settings.BENCHMARK_UPLOAD_MAX_BYTES} bytes")
    raw = gunzip_limited(body, max_bytes=settings.BENCHMARK_UPLOAD_MAX_RAW_BYTES)
    plan = attempt.job.plan
    parsed = parse_upload(
        raw,
        load_point_count=load_point_limit(plan),
        max_records=int(attempt.request_count or 0),
        plan_points=None if plan.search else plan.load_points,
    )
    _check_chunk_count(attempt, parsed.load_point_index, parsed.chunk_count)
    try:
        with transaction.atomic():
            upload = ResultUpload.objects.create(
                attempt=attempt,
                job=attempt.job,
                load_point_index=parsed.load_point_index,
                chunk_index=parsed.chunk_index,
                chunk_count=parsed.chunk_count,
                idempotency_key=key,
                sha256=hashlib.sha256(body).hexdigest(),
                body=b"" if connection.vendor == "postgresql" else body,
                record_count=len(parsed.records),
                meta=parsed.meta,
            )
            _store_body(upload, body)
            result_uploaded.send(sender=ResultUpload, upload=upload, document=parsed.document)
            audit_record(
                actor=Actor.for_runner(runner),
                action="result_upload.create",
                obj=upload,
                team=attempt.job.team,
                after={
                    "attempt_id": attempt.pk,
                    "load_point_index": upload.load_point_index,
                    "chunk_index": upload.chunk_index,
                    "record_count": upload.record_count,
                    "sha256": upload.sha256,
                },
            )
    except IntegrityError as error:
        replay = _replay(key, runner, attempt_id)
        if replay is not None:
            return replay, False
        raise ConflictError(
            "This chunk of this load point was stored already under another key.",
            code="duplicate_chunk",
        ) from error
    return upload, True


def _missing_load_points(attempt: JobAttempt) -> list[int]:
    """Load points without every chunk stored; a rate search may stop early, so it needs one."""
    rows = ResultUpload.objects.filter(attempt=attempt).values_list(
        "load_point_index", "chunk_index", "chunk_count"
    )
    chunks: dict[int, set[int]] = {}
    counts: dict[int, int] = {}
    for index, chunk, count in rows:
        chunks.setdefault(index, set()).add(chunk)
        counts[index] = count
    complete = {index for index in chunks if chunks[index] >= set(range(counts[index]))}
    if attempt.job.plan.mode == PlanMode.MAX_RATE_SEARCH:
        return [] if complete else [0]
    return [p["index"] for p in attempt.job.plan.load_points if p["index"] not in complete]


_JOB_STATE_OF = {
    AttemptState.SUCCEEDED: JobState.SUCCEEDED,
    AttemptState.FAILED: JobState.FAILED,
    AttemptState.CANCELLED: JobState.CANCELLED,
}


@transaction.atomic
def attempt_finish(*, runner: Runner, attempt_id: int, state: Any, reason: Any) -> JobAttempt:
    """End the runner's attempt; the job follows (a success without all results fails)."""
    if state not in ATTEMPT_FINISH_STATES:
        raise ValidationError({"state": f"Must be one of {', '.join(ATTEMPT_FINISH_STATES)}."})
    reason = str(reason or "")[:2000]
    attempt = _own_attempt(runner, attempt_id)
    now = timezone.now()
    finished = JobAttempt.objects.filter(
        pk=attempt.pk, runner=runner, state__in=ATTEMPT_LEASED
    ).update(state=state, reason=reason, finished_at=now, lease_expires_at=None)
    if not finished:
        if attempt.state == state:
            return attempt  # the same finish sent again
        raise _conflict(attempt)
    actor = Actor.for_runner(runner)
    audit_record(
        actor=actor,
        action="attempt.finish",
        obj=attempt,
        team=attempt.job.team,
        before={"state": attempt.state},
        after={"state": state, "reason": reason},
    )
    job_state, job_reason = _JOB_STATE_OF[state], reason
    if state == AttemptState.SUCCEEDED:
        missing = _missing_load_points(attempt)
        if missing:
            job_state = JobState.FAILED
            job_reason = f"Results of load point(s) {missing} never arrived."
    label = f"Attempt {attempt.number} on {runner.name}"
    job_reason = f"{label}: {job_reason}" if job_reason else f"{label} {job_state}."
    job_finish(attempt.job, state=job_state, reason=job_reason, actor=actor)
    attempt.refresh_from_db()
    return attempt


@transaction.atomic
def quality_upload(*, runner: Runner, attempt_id: int, payload: Any) -> QualityResult:
    """Store (or replace) the probe outputs of the runner's leased attempt, scored."""
    attempt = _own_attempt(runner, attempt_id)
    if attempt.state not in ATTEMPT_LEASED:
        raise _conflict(attempt)
    job = attempt.job
    if not job.quality:
        raise ValidationError({"quality": "This job has no quality probe."})
    if not isinstance(payload, Mapping) or not isinstance(payload.get("outputs"), list):
        raise ValidationError({"outputs": "Send the probe's outputs as a list."})
    sent = payload["outputs"]
    if len(sent) > len(job.quality["prompts"]):
        raise ValidationError({"outputs": f"The probe has {len(job.quality['prompts'])} prompts."})
    outputs = [clean_output(raw, index) for index, raw in enumerate(sent)]
    score = score_outputs(outputs, simulated=job.plan.simulated).as_dict()
    result, created = QualityResult.objects.update_or_create(
        attempt=attempt,
        defaults={
            "job": job,
            "probe_set": str(job.quality.get("set") or "")[:60],
            "sampling": job.quality.get("sampling") or {},
            "outputs": outputs,
            "score": score,
            "evaluation": clean_evaluation(payload.get("evaluation")),
        },
    )
    audit_record(
        actor=Actor.for_runner(runner),
        action="quality_result.create" if created else "quality_result.replace",
        obj=result,
        team=job.team,
        after={"attempt_id": attempt.pk, "score": score, "evaluation": result.evaluation},
    )
    return result
