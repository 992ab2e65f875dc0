"""Ingest speed: runner result chunks through `ingest_upload` against a raw PostgreSQL COPY.

Both sides store the same rows in the same run, into the same `evidence_sample` table of a
throw-away database. The ingest side calls the service directly (not over HTTP: a million
samples are a thousand gzip chunks of the runner protocol, and the web layer would only add the
request parsing the lead's upload service already measures); each chunk is one transaction
that decodes the stored gzip body, validates it (schema.parse_upload), copies the samples and,
after the last chunk, summarises the load point from every stored sample. The raw side sends
the identical rows, already rendered as COPY text, in one COPY. Needs PostgreSQL
(DATABASE_URL); the database `<name>_bench_ingest` is created and dropped.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stackselect SECRET_KEY=bench \
        .venv/bin/python bench/bench_ingest.py --samples 1000000
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection, transaction  # noqa: E402

from apps.accounts.models import Team  # noqa: E402
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt, ResultUpload  # noqa: E402
from apps.benchmarks.plan_identity import PlanOptions, build_identity, identity_fingerprint  # noqa: E402
from apps.evidence.ingest import ingest_upload  # noqa: E402
from apps.evidence.models import EvidenceRun, LoadPointResult  # noqa: E402
from apps.evidence.sample_store import copy_statement  # noqa: E402
from apps.selections.models import Selection  # noqa: E402

WORKLOAD = {
    "isl": {"kind": "fixed", "value": 512},
    "osl": {"kind": "fixed", "value": 4},
    "arrival": {"process": "poisson", "rate_rps": 1000.0},
}
LOAD_POINT = {"index": 0, "rate_rps": 1000.0}
GAPS = 3


def chunk_records(start: int, count: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Streamed requests of 4 output tokens: TTFT, three gaps, E2E their sum."""
    ttft = rng.lognormal(np.log(0.2), 0.5, count)
    gaps = rng.lognormal(np.log(0.02), 0.3, (count, GAPS))
    return [
        {
            "index": start + i,
            "send_s": (start + i) / 1000,
            "ttft_s": float(ttft[i]),
            "itl_s": gaps[i].tolist(),
            "e2e_s": float(ttft[i] + gaps[i].sum()),
            "input_tokens": 512,
            "output_tokens": GAPS + 1,
            "error": None,
            "status": 200,
        }
        for i in range(count)
    ]


def copy_line(result_id: int, record: dict[str, Any]) -> str:
    """The row of `record` in COPY text format, the columns of sample_store.SAMPLE_COLUMNS."""
    tpot = (record["e2e_s"] - record["ttft_s"]) / (record["output_tokens"] - 1)
    packed = np.asarray(record["itl_s"], "<f8").tobytes().hex()
    values = (
        result_id,
        record["index"],
        record["send_s"],
        record["ttft_s"],
        record["e2e_s"],
        tpot,
        record["input_tokens"],
        record["output_tokens"],
        len(record["itl_s"]),
        f"\\\\x{packed}",
        "\\N",
        "\\N",
        record["status"],
    )
    return "\t".join(map(str, values)) + "\n"


def attempt_rows() -> JobAttempt:
    team = Team.objects.create(slug="bench", name="Bench")
    selection = Selection.objects.create(
        team=team, title="bench", workload=WORKLOAD, slo={"ttft_ms": 500, "tpot_ms": 50}
    )
    options = PlanOptions(run_mode="simulated", request_count=10, load_points=(dict(LOAD_POINT),))
    identity = build_identity(
        model={"slug": "bench-model", "checkpoint": "bench", "tokenizer": "bench"},
        precision="bf16",
        kv_dtype="bf16",
        workload=WORKLOAD,
        options=options,
        load_points=[LOAD_POINT],
        search=None,
        simulated=True,
    )
    plan = BenchmarkPlan.objects.create(
        team=team,
        selection=selection,
        title="bench",
        run_mode=options.run_mode,
        identity=identity,
        identity_fingerprint=identity_fingerprint(identity),
        load_points=[LOAD_POINT],
        requests=[],
    )
    stack = {"engine": "simulated", "accelerator": "h100-sxm", "gpu_count": 1, "tp": 1}
    job = BenchmarkJob.objects.create(
        plan=plan, team=team, stack=stack, engine={}, accelerator="h100-sxm", gpu_count=1
    )
    return JobAttempt.objects.create(job=job, number=1, queue="bench")


def prepare(attempt: JobAttempt, samples: int, chunk: int, seed: int) -> tuple[list, io.StringIO]:
    """Stored uploads (as the result-upload service leaves them) and the same rows as COPY text
    for a second load point result that the raw COPY fills."""
    rng = np.random.default_rng(seed)
    run = EvidenceRun.objects.create(
        team_id=attempt.job.team_id,
        source="runner",
        tool="raw copy",
        identity={},
        identity_fingerprint="-",
    )
    raw_result = LoadPointResult.objects.create(run=run, index=0, load_point={}, duration_s=1)
    text = io.StringIO()
    uploads = []
    count = -(-samples // chunk)
    for number, start in enumerate(range(0, samples, chunk)):
        records = chunk_records(start, min(chunk, samples - start), rng)
        text.writelines(copy_line(raw_result.pk, record) for record in records)
        document = {
            **{"load_point_index": 0, "load_point": LOAD_POINT, "duration_s": samples / 1000},
            **{"chunk_index": number, "chunk_count": count, "records": records},
        }
        body = gzip.compress(json.dumps(document).encode(), compresslevel=1)
        uploads.append(
            ResultUpload.objects.create(
                attempt=attempt,
                job=attempt.job,
                load_point_index=0,
                chunk_index=number,
                chunk_count=count,
                idempotency_key=f"bench-{number}",
                sha256=hashlib.sha256(body).hexdigest(),
                body=body,
                record_count=len(records),
            )
        )
    return uploads, text


def timed_ingest(uploads: list[ResultUpload]) -> float:
    start = perf_counter()
    for upload in uploads:
        with transaction.atomic():
            result = ingest_upload(upload=upload)
    elapsed = perf_counter() - start
    assert result.complete and result.summary is not None
    return elapsed


def timed_copy(text: io.StringIO) -> float:
    data = text.getvalue().encode()
    start = perf_counter()
    with (
        transaction.atomic(),
        connection.cursor() as cursor,
        cursor.cursor.copy(copy_statement()) as copy,
    ):
        for offset in range(0, len(data), 1 << 20):
            copy.write(data[offset : offset + (1 << 20)])
    return perf_counter() - start


def lines(args: argparse.Namespace, ingest: float, raw: float) -> Iterator[str]:
    yield f"samples: {args.samples:,} in chunks of {args.chunk:,} records"
    yield f"ingest_upload (decode, validate, COPY, summary): {ingest:.2f} s"
    yield f"raw PostgreSQL COPY of the same rows:           {raw:.2f} s"
    yield f"ratio: {ingest / raw:.2f}x  ({args.samples / ingest:,.0f} samples/s ingested)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=1000, help="records per upload chunk")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("bench_ingest needs PostgreSQL: set DATABASE_URL=postgres://...")
    name = f"{connection.settings_dict['NAME']}_bench_ingest"
    connection.settings_dict["TEST"]["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        attempt = attempt_rows()
        uploads, text = prepare(attempt, args.samples, args.chunk, args.seed)
        ingest = timed_ingest(uploads)
        raw = timed_copy(text)
        print("\n".join(lines(args, ingest, raw)))
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)


if __name__ == "__main__":
    main()
