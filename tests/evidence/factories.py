"""Database rows for the evidence tests: a selection with candidates, its plan, one job and
attempt per candidate (made with the ORM, no dispatch), and result uploads as a runner sends."""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

from django.db import transaction

from apps.benchmarks.choices import RunMode
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt, ResultUpload
from apps.benchmarks.plan_identity import (
    PlanOptions,
    build_identity,
    identity_fingerprint,
    normalise_load_points,
    plan_workload,
    request_schedule,
)
from apps.evidence.ingest import ingest_upload
from apps.selections.models import Selection
from tests.benchmarks.factories import WORKLOAD, catalog, selection_with_candidates
from tests.evidence.samples import streamed

__all__ = [
    "answered",
    "attempt_for",
    "catalog",
    "drawn_outputs_plan",
    "measured_attempt",
    "plan_for",
    "result_upload",
    "selection_with_candidates",
]


def plan_for(
    selection: Selection,
    *,
    load_points: list[dict[str, Any]],
    request_count: int = 20,
    run_mode: str = RunMode.MEASURED,
    seed: int = 0,
    workload: dict[str, Any] = WORKLOAD,
) -> BenchmarkPlan:
    """A plan measured on the stacks' engines, or a dry run with `run_mode="simulated"`, with
    its fixed-seed request schedule as plan creation stores it."""
    options = PlanOptions(
        run_mode=run_mode, request_count=request_count, load_points=tuple(load_points), seed=seed
    )
    points = normalise_load_points(load_points)
    identity = build_identity(
        model={
            "slug": "llama-3.1-8b",
            "checkpoint": "meta-llama/Llama-3.1-8B-Instruct",
            "tokenizer": "meta-llama/Llama-3.1-8B-Instruct",
        },
        precision="bf16",
        kv_dtype="bf16",
        workload=workload,
        options=options,
        load_points=points,
        search=None,
        simulated=run_mode == RunMode.SIMULATED,
    )
    return BenchmarkPlan.objects.create(
        team=selection.team,
        selection=selection,
        title="plan",
        run_mode=options.run_mode,
        identity=identity,
        identity_fingerprint=identity_fingerprint(identity),
        load_points=points,
        requests=request_schedule(plan_workload(workload), count=request_count, seed=seed),
    )


def attempt_for(plan: BenchmarkPlan, candidate: Any, number: int = 1) -> JobAttempt:
    job = BenchmarkJob.objects.create(
        plan=plan,
        team=plan.team,
        candidate=candidate,
        stack=candidate.stack,
        engine={"adapter": "simulated" if plan.simulated else candidate.stack["engine"]},
        accelerator=candidate.stack["accelerator"],
        gpu_count=candidate.stack["gpu_count"],
    )
    return JobAttempt.objects.create(job=job, number=number, queue="q")


def result_upload(
    attempt: JobAttempt,
    records: list[dict[str, Any]],
    *,
    load_point: dict[str, Any],
    duration_s: float | None = None,
    chunk_index: int = 0,
    chunk_count: int = 1,
    **extra: Any,
) -> ResultUpload:
    """A stored upload as the result-upload service leaves it (gzip body and checksum). The
    load point lasts 2 s, or until its last request ended if that is later."""
    if duration_s is None:
        ends = [(r.get("send_s") or 0) + (r.get("e2e_s") or 0) for r in records]
        duration_s = max([2.0, *ends])
    document = {
        "load_point_index": load_point["index"],
        "load_point": load_point,
        "started_at": "2026-01-01T00:00:00Z",
        "duration_s": duration_s,
        "chunk_index": chunk_index,
        "chunk_count": chunk_count,
        "engine": {"version": "sim-0.1", "effective_config": {}},
        "harness": {"name": "stackselect-harness", "version": "0.1"},
        "records": records,
        **extra,
    }
    body = gzip.compress(json.dumps(document).encode())
    return ResultUpload.objects.create(
        attempt=attempt,
        job=attempt.job,
        load_point_index=load_point["index"],
        chunk_index=chunk_index,
        chunk_count=chunk_count,
        idempotency_key=f"a{attempt.pk}-lp{load_point['index']}-c{chunk_index}",
        sha256=hashlib.sha256(body).hexdigest(),
        body=body,
        record_count=len(records),
    )


def measured_attempt(
    plan: BenchmarkPlan,
    candidate: Any,
    records: list[dict[str, Any]],
    *,
    number: int = 1,
) -> JobAttempt:
    """An attempt whose every load point uploaded `records` and was ingested."""
    attempt = attempt_for(plan, candidate, number=number)
    for point in plan.load_points:
        with transaction.atomic():
            ingest_upload(upload=result_upload(attempt, records, load_point=point))
    return attempt


# Output lengths drawn from a distribution: eight draws at seed 0 average 139 tokens, not 128.
DRAWN_OUTPUTS = {"kind": "normal", "mean": 128, "std": 32, "min": 16, "max": 256}


def drawn_outputs_plan(selection: Selection) -> BenchmarkPlan:
    """A plan of eight requests whose output lengths sit off their distribution's mean."""
    return plan_for(
        selection,
        load_points=[{"rate_rps": 1.0}],
        request_count=8,
        workload={**WORKLOAD, "osl": DRAWN_OUTPUTS},
    )


def answered(plan: BenchmarkPlan, share: float = 1.0) -> list[dict[str, Any]]:
    """Records of every scheduled request: its prompt as asked, `share` of its output streamed."""
    return [
        streamed(
            request["index"],
            ttft_s=0.1,
            gaps=[0.01] * (max(1, int(request["output_tokens"] * share)) - 1),
            input_tokens=request["input_tokens"],
        )
        for request in plan.requests
    ]
