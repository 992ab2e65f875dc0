"""Reads: plans and jobs of a team, the job spec a runner fetches, progress, fleet rows, gauges."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Func, IntegerField, Prefetch, QuerySet
from django.utils import timezone
from stackselect_domain import fairness

from apps.accounts.scoping import scoped
from apps.benchmarks.choices import ATTEMPT_LEASED, JOB_TERMINAL, JobState
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt
from apps.benchmarks.search import load_point_limit, search_view
from apps.benchmarks.signals import job_results_wanted
from apps.core.metrics import GaugeSample
from apps.runners.models import Runner
from apps.runners.selectors import runner_state, runners_of


class JsonArrayLength(Func):
    """The length of a JSON array column, counted by the database (the SQL names differ)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="json_array_length", **extra)


def plans_of(*, team: Any) -> QuerySet[BenchmarkPlan]:
    return scoped(
        BenchmarkPlan.objects.select_related("selection")
        .annotate(job_count=Count("jobs"))
        .order_by("-created_at", "-id"),
        team,
    )


def jobs_of(*, team: Any) -> QuerySet[BenchmarkJob]:
    return scoped(BenchmarkJob.objects.select_related("plan"), team)


def plan_jobs(plan: BenchmarkPlan) -> QuerySet[BenchmarkJob]:
    return plan.jobs.order_by("pk")


def job_attempts(job: BenchmarkJob) -> QuerySet[JobAttempt]:
    return job.attempts.select_related("runner", "log").order_by("-number")


def progress_fraction(job: BenchmarkJob) -> float:
    """Share of the job done: finished load points plus the current one's done/total."""
    if job.state == JobState.SUCCEEDED:
        return 1.0
    progress = job.progress or {}
    points = max(load_point_limit(job.plan), 1)
    index = progress.get("load_point")
    done, total = progress.get("done"), progress.get("total")
    if not isinstance(index, int) or not isinstance(done, int) or not total:
        return 0.0
    return max(0.0, min(1.0, (index + min(done / total, 1.0)) / points))


def job_progress_row(job: BenchmarkJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "state": job.state,
        "state_label": job.get_state_display(),
        "state_reason": job.state_reason,
        "cancel_requested": job.cancel_requested,
        "terminal": job.state in JOB_TERMINAL,
        "fraction": round(progress_fraction(job), 4),
        "message": (job.progress or {}).get("message", ""),
        "search": search_view(job),
    }


def plan_progress(plan: BenchmarkPlan) -> dict[str, Any]:
    """The small JSON document the plan page polls."""
    jobs = list(plan.jobs.select_related("plan").order_by("pk"))
    return {
        "plan": plan.pk,
        "state": plan.state,
        "state_label": plan.get_state_display(),
        "jobs": [job_progress_row(job) for job in jobs],
    }


def _sampling(harness: dict[str, Any]) -> dict[str, Any]:
    """The plan's temperature as request fields; a plan made before it had one sends none."""
    if "temperature" not in harness:
        return {}
    return {"extra_body": {"temperature": harness["temperature"]}}


def attempt_spec(attempt: JobAttempt) -> dict[str, Any]:
    """The job spec of docs/runner-protocol.md, built from the plan and the job."""
    job, plan = attempt.job, attempt.job.plan
    identity = plan.identity
    workload = identity["workload"]
    harness = identity["harness"]
    return {
        "attempt_id": attempt.pk,
        "job_id": job.pk,
        "plan_id": plan.pk,
        "identity": identity,
        "identity_fingerprint": plan.identity_fingerprint,
        "stack": job.stack,
        "engine": job.engine,
        "harness": {
            "endpoint": harness["endpoint"],
            "ignore_eos": harness["ignore_eos"],
            "min_tokens": True,
            "timeout_s": harness["timeout_s"],
            "warmup_requests": harness["warmup_requests"],
            "shared_prefix_tokens": int(workload.get("prefix_tokens") or 0),
            "prompt_seed": workload["seed"],
            **_sampling(harness),
        },
        "requests": plan.requests,
        "load_points": plan.load_points,
        "search": plan.search,
        "measurement_window_s": identity["measurement_window_s"],
        "failure_policy": identity["failure_policy"],
        "quality": job.quality,
    }


@dataclass(frozen=True)
class RunnerRow:
    runner: Runner
    state: str
    attempt: JobAttempt | None

    @property
    def fraction(self) -> float:
        return progress_fraction(self.attempt.job) if self.attempt else 0.0


def runner_rows(*, team: Any) -> list[RunnerRow]:
    """Each runner of the team with its shown state and current attempt (two queries)."""
    leased = JobAttempt.objects.filter(state__in=ATTEMPT_LEASED).select_related("job__plan")
    runners = runners_of(team=team).prefetch_related(
        Prefetch("attempts", queryset=leased, to_attr="leased_attempts")
    )
    now = timezone.now()
    rows = []
    for runner in runners:
        current = runner.leased_attempts[0] if runner.leased_attempts else None
        rows.append(
            RunnerRow(runner, runner_state(runner, busy=current is not None, now=now), current)
        )
    return rows


def runner_recent_attempts(runner: Runner, limit: int = 20) -> QuerySet[JobAttempt]:
    return runner.attempts.select_related("job__plan").order_by("-dispatched_at")[:limit]


def job_metrics() -> Iterator[GaugeSample]:
    counts = dict(
        BenchmarkJob.objects.order_by()
        .values("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    for state in JobState.values:
        yield (
            "stackselect_benchmark_jobs",
            "Benchmark jobs by state.",
            {"state": state},
            float(counts.get(state, 0)),
        )


def job_results(*, job: BenchmarkJob) -> list[Any]:
    """The job's analysed load points, from the app that analyses them (`job_results_wanted`)."""
    return [
        result
        for _, answer in job_results_wanted.send(sender=BenchmarkJob, job=job)
        for result in answer or ()
    ]


def _planned_identity(plan: BenchmarkPlan, job: BenchmarkJob) -> dict[str, Any]:
    """The identity fields the checklist reads, as the plan will run them."""
    identity, model = plan.identity, plan.identity.get("model") or {}
    workload = identity.get("workload") or {}
    return {
        "checkpoint": model.get("checkpoint"),
        "tokenizer": model.get("tokenizer"),
        "precision": {"weights": job.stack.get("precision"), "kv_cache": identity.get("kv_dtype")},
        "arrival": {"seed": workload.get("seed"), "request_count": workload.get("request_count")},
        "osl_distribution": {"ignore_eos": (identity.get("harness") or {}).get("ignore_eos")},
    }


def plan_checklist(plan: BenchmarkPlan) -> list[fairness.Item]:
    """The fair-comparison checklist of what the plan will run: one entry per candidate
    (its trials share everything the checklist reads but the settings)."""
    points = plan.search["max_probes"] if plan.search else len(plan.load_points)
    by_candidate: dict[Any, fairness.CandidateFacts] = {}
    for job in plan.jobs.order_by("pk"):
        origin = (job.tuning or {}).get("origin")
        earlier = by_candidate.get(job.candidate_id)
        swept = earlier is not None and earlier.tuning_origin != origin
        by_candidate[job.candidate_id] = fairness.CandidateFacts(
            identity=_planned_identity(plan, job),
            load_points=points,
            tuning_origin="sweep" if swept else origin,
            quality=plan.run_mode if job.quality else None,
        )
    return fairness.checklist(list(by_candidate.values()))
