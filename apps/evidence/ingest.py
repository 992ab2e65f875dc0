"""Runner result uploads into evidence, inside the transaction that stores the upload.

`ingest_upload` is called by the benchmarks result-upload service right after it creates the
ResultUpload row. It raises (UploadError, a ValueError naming the field) on bad data, so the
caller's transaction stores nothing; it never commits or catches on its own. One EvidenceRun
per attempt; the chunks of a load point accumulate into one LoadPointResult, summarised once
the last chunk is in, from every stored sample.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import connection
from stackselect_domain.identity import fingerprint

from apps.benchmarks.models import JobAttempt, ResultUpload
from apps.benchmarks.results import gunzip_limited
from apps.evidence.choices import RunSource
from apps.evidence.models import EvidenceRun, LoadPointResult
from apps.evidence.probes import probe_figures
from apps.evidence.run_identity import runner_identity
from apps.evidence.sample_store import (
    DUPLICATE,
    DuplicateSampleError,
    read_samples,
    store_samples,
)
from apps.evidence.schema import FieldError, LoadPointSamples, UploadError, parse_upload
from apps.evidence.summaries import slo_of, summarise_result


def decode_body(body: bytes) -> Any:
    """The JSON document of a stored gzip body, within the decompressed size limit."""
    try:
        raw = gunzip_limited(bytes(body), max_bytes=settings.BENCHMARK_UPLOAD_MAX_RAW_BYTES)
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise UploadError([FieldError("body", str(error))]) from error


def _run_for(upload: ResultUpload, document: Mapping[str, Any]) -> EvidenceRun:
    job = upload.job
    plan = job.plan
    harness = document.get("harness") if isinstance(document.get("harness"), Mapping) else {}
    engine = document.get("engine") if isinstance(document.get("engine"), Mapping) else {}
    run = EvidenceRun.objects.filter(attempt_id=upload.attempt_id).first()
    if run is not None:
        return run
    identity = runner_identity(
        plan_identity=plan.identity, stack=job.stack, engine=engine, harness=harness
    )
    return EvidenceRun.objects.create(
        team_id=job.team_id,
        selection_id=plan.selection_id,
        candidate_id=job.candidate_id,
        job=job,
        attempt_id=upload.attempt_id,
        source=RunSource.RUNNER,
        tool=str(harness.get("name") or "stackselect-runner")[:100],
        tool_version=str(harness.get("version") or "")[:100],
        identity=identity,
        identity_fingerprint=fingerprint(identity),
        gpu_count=job.gpu_count,
    )


def _requested_lengths(requests: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """The mean lengths of the plan's own request schedule, which the runner sends whole at each
    load point: a small schedule's draw sits off its distribution's mean (12 requests of a
    128-token mean drew 120), and the engine is judged on what it was asked for."""
    if not requests:
        return None, None
    count = len(requests)
    return (
        sum(request["input_tokens"] for request in requests) / count,
        sum(request["output_tokens"] for request in requests) / count,
    )


def _result_for(
    run: EvidenceRun, upload: ResultUpload, samples: LoadPointSamples
) -> LoadPointResult:
    result = LoadPointResult.objects.filter(run=run, index=upload.load_point_index).first()
    if result is None:
        isl, osl = _requested_lengths(upload.job.plan.requests)
        return LoadPointResult.objects.create(
            run=run,
            index=upload.load_point_index,
            load_point=samples.load_point.as_dict(),
            duration_s=samples.duration_s,
            chunk_count=upload.chunk_count,
            requested_isl=isl,
            requested_osl=osl,
        )
    if upload.chunk_index in result.chunks_received:
        raise UploadError([FieldError("chunk_index", "this chunk was ingested already")])
    if result.chunk_count != upload.chunk_count:
        message = f"must stay {result.chunk_count} for every chunk of a load point"
        raise UploadError([FieldError("chunk_count", message)])
    return result


def ingest_upload(
    *, upload: ResultUpload, body: Mapping[str, Any] | None = None
) -> LoadPointResult:
    """Store one result chunk's samples (COPY) and, once complete, the load point's summary.

    `body` is the decoded JSON when the caller has it already; otherwise the stored gzip body
    is decoded again. Raises UploadError naming the field when the records are not valid.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("ingest_upload must run inside the transaction that stores the upload")
    document = decode_body(upload.body) if body is None else body
    samples = parse_upload(document)
    # One attempt's chunks are ingested one at a time, so counts and checksums stay exact.
    JobAttempt.objects.select_for_update().only("pk").get(pk=upload.attempt_id)
    run = _run_for(upload, document)
    result = _result_for(run, upload, samples)
    try:
        store_samples(result=result, samples=samples)
    except DuplicateSampleError as error:
        raise UploadError([FieldError("records", DUPLICATE)]) from error
    result.chunks_received = sorted({*result.chunks_received, upload.chunk_index})
    result.duration_s = max(result.duration_s, samples.duration_s)
    if result.complete:
        whole = samples
        if result.chunk_count > 1:
            whole = read_samples(
                result=result, load_point=samples.load_point, duration_s=result.duration_s
            )
        summarise_result(
            result=result,
            samples=whole,
            gpu_count=run.gpu_count,
            slo=slo_of(upload.job.plan.selection.slo),
        )
    result.save()
    figures = probe_figures(upload.job.plan, samples)
    if figures:
        upload.summary = figures
        upload.save(update_fields=["summary"])
    checksum = {"name": f"result upload {upload.pk}", "sha256": upload.sha256}
    run.raw_checksums = [*run.raw_checksums, {**checksum, "bytes": len(upload.body)}]
    run.save(update_fields=["raw_checksums"])
    return result
