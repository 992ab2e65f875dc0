"""Ingest speed over the runner's upload path, against a raw PostgreSQL COPY of the same rows.

Starts the whole stack privately (bench/faults/stack.py: a PostgreSQL cluster, Redis and the
migrated app under gunicorn), enrolls a runner, and gives it claimed attempts of a fixed plan
(`--load-points` load points of `--requests` requests each, the protocol's limits; as many jobs
as `--samples` needs). Then it POSTs every result chunk the way the runner does (gzip JSON,
split as the runner splits a load point: at most `--chunk` records and `--chunk-bytes` of
their JSON, the runner's defaults; `Authorization: Runner ...`, an Idempotency-Key), one after
the other: the server unzips, validates, COPYs the samples and summarises each load point at
its last chunk. The raw side sends the identical rows, already rendered as COPY text, in one
COPY into the same `evidence_sample` table. The bodies are built before either clock starts.

For each upload the gunicorn workers' peak resident memory is reset (/proc/PID/clear_refs) and
read back (VmHWM), so the peak a worker reached while handling it is printed, above its resident
size before.

    .venv/bin/python bench/bench_ingest.py --samples 1000000
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import io
import json
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))

from profiling import profile_lines, profile_rounds
from stack import PrivateStack, private_stack
from stackselect_runner.config import DEFAULT_UPLOAD_CHUNK_RECORDS, UPLOAD_CHUNK_BYTES
from stackselect_runner.uploads import chunk_starts, idempotency_key

WORKLOAD = {
    "isl": {"kind": "fixed", "value": 512},
    "osl": {"kind": "fixed", "value": 4},
    "arrival": {"process": "poisson", "rate_rps": 1000.0},
}
GAPS = 3
PROBE = {
    "gpus": [],
    "gpu_count": 1,
    "simulated": True,
    "simulated_accelerator": "h100-sxm",
    "engines": {"simulated": "0.1.0"},
    "hostname": "bench",
}


@dataclass(frozen=True)
class Upload:
    attempt_id: int
    key: str
    body: bytes


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


def copy_line(result_id: int, index: int, record: dict[str, Any]) -> str:
    """The row of `record` in COPY text format, the columns of sample_store.SAMPLE_COLUMNS
    (numbered `index`: the raw side keeps every load point's rows under one result)."""
    tpot = (record["e2e_s"] - record["ttft_s"]) / (record["output_tokens"] - 1)
    packed = np.asarray(record["itl_s"], "<f8").tobytes().hex()
    values = (
        result_id,
        index,
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


def claimed_attempts(jobs: int, load_points: int, requests: int) -> tuple[list[int], str]:
    """A team, an enrolled runner and `jobs` claimed attempts of one fixed plan (ORM rows, as
    dispatch and claim would leave them); returns (attempt ids, runner credential)."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from apps.accounts.choices import Role
    from apps.accounts.models import Membership, Team
    from apps.benchmarks.choices import AttemptState, JobState
    from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt
    from apps.benchmarks.plan_identity import (
        PlanOptions,
        build_identity,
        identity_fingerprint,
        plan_workload,
        request_schedule,
    )
    from apps.runners.services import enrollment_token_create, runner_enroll
    from apps.selections.models import Selection

    team = Team.objects.create(slug="bench-ingest", name="Ingest bench")
    admin = get_user_model().objects.create_user("bench-ingest", password=None)
    Membership.objects.create(user=admin, team=team, role=Role.ADMIN)
    _, token = enrollment_token_create(actor_user=admin, team=team)
    runner, credential = runner_enroll(token_plaintext=token, name="bench-1", probe=PROBE)
    selection = Selection.objects.create(
        team=team, title="bench", workload=WORKLOAD, slo={"ttft_ms": 500, "tpot_ms": 50}
    )
    points = [{"index": i, "rate_rps": 1000.0} for i in range(load_points)]
    options = PlanOptions(run_mode="simulated", request_count=requests, load_points=tuple(points))
    identity = build_identity(
        model={"slug": "bench-model", "checkpoint": "bench", "tokenizer": "bench"},
        precision="bf16",
        kv_dtype="bf16",
        workload=WORKLOAD,
        options=options,
        load_points=points,
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
        load_points=points,
        requests=request_schedule(plan_workload(WORKLOAD), count=requests, seed=0),
    )
    stack = {"engine": "simulated", "accelerator": "h100-sxm", "gpu_count": 1, "tp": 1}
    lease = timezone.now() + timedelta(hours=6)
    ids = []
    for _ in range(jobs):
        job = BenchmarkJob.objects.create(
            plan=plan,
            team=team,
            stack=stack,
            engine={"adapter": "simulated"},
            accelerator="h100-sxm",
            gpu_count=1,
            state=JobState.RUNNING,
        )
        attempt = JobAttempt.objects.create(
            job=job,
            number=1,
            queue="bench",
            runner=runner,
            state=AttemptState.RUNNING,
            lease_expires_at=lease,
            claimed_at=timezone.now(),
        )
        ids.append(attempt.pk)
    return ids, credential


def raw_result_id() -> int:
    """A second load point result, of a run of its own, for the raw COPY's rows."""
    from apps.accounts.models import Team
    from apps.evidence.models import EvidenceRun, LoadPointResult

    run = EvidenceRun.objects.create(
        team=Team.objects.get(slug="bench-ingest"),
        source="runner",
        tool="raw copy",
        identity={},
        identity_fingerprint="-",
    )
    return LoadPointResult.objects.create(run=run, index=0, load_point={}, duration_s=1).pk


def load_point_uploads(
    args: argparse.Namespace, attempt_id: int, index: int, measured: list[dict[str, Any]]
) -> list[tuple[Upload, list[dict[str, Any]]]]:
    """One load point's chunks as the runner sends them (gzip JSON), each with its records."""
    count = len(measured)
    starts = chunk_starts(measured, args.chunk, args.chunk_bytes)
    chunks = []
    for number, (start, stop) in enumerate(pairwise([*starts, count])):
        records = measured[start:stop]
        document = {
            "load_point_index": index,
            "load_point": {"index": index, "rate_rps": 1000.0},
            "started_at": "2026-01-01T00:00:00+00:00",
            "duration_s": count / 1000 + 5,  # the last requests end after sending
            "chunk_index": number,
            "chunk_count": len(starts),
            "engine": {"version": "sim-0.1", "effective_config": {}},
            "harness": {"name": "stackselect-harness", "version": "0.1"},
            "records": records,
        }
        key = idempotency_key(attempt_id, index, number)
        body = gzip.compress(json.dumps(document).encode())
        chunks.append((Upload(attempt_id, key, body), records))
    return chunks


def prepare(
    args: argparse.Namespace, attempt_ids: list[int], raw_id: int
) -> tuple[list[Upload], io.StringIO]:
    """Every chunk as the runner sends it (gzip JSON) and the same rows as COPY text."""
    rng = np.random.default_rng(args.seed)
    text = io.StringIO()
    uploads = []
    left, written = args.samples, 0
    for attempt_id in attempt_ids:
        for index in range(args.load_points):
            count = min(args.requests, left)
            if count <= 0:
                break
            left -= count
            for upload, records in load_point_uploads(
                args, attempt_id, index, chunk_records(0, count, rng)
            ):
                text.writelines(
                    copy_line(raw_id, written + i, record) for i, record in enumerate(records)
                )
                written += len(records)
                uploads.append(upload)
    return uploads, text


# Where an upload's own time is counted (bench/profiling.py): the first fragment that occurs
# in a function's "file:function" label names its layer; a function none names (C code such as
# msgspec's decode or numpy's, library code) counts for the layers of its callers.
LAYERS = (
    ("database", "/psycopg/"),
    ("database", "/django/db/"),
    ("unzip", "/apps/benchmarks/results.py:gunzip_limited"),
    ("decode+validation", "/apps/core/parsers.py"),
    ("decode+validation", "/apps/benchmarks/results.py"),
    ("decode+validation", "/apps/evidence/schema.py"),
    ("COPY building", "/apps/evidence/sample_store.py"),
    ("summary", "/apps/evidence/summaries.py"),
    ("summary", "/apps/evidence/analysis.py"),
    ("summary", "/apps/evidence/stored.py"),
    ("summary", "/apps/evidence/probes.py"),
    ("summary", "/stackselect_domain/"),
    ("audit", "/apps/audit/"),
    ("our other code", "/apps/"),
    ("Django and DRF", "/django/"),
    ("Django and DRF", "/rest_framework/"),
)


def where_upload_time_goes(
    args: argparse.Namespace, host: str, attempt_id: int, credential: str, rounds: int
) -> list[str]:
    """`rounds` uploads of fresh load points of one more attempt, each a chunk as the bench
    sends them, POSTed through Django's test client in this process under cProfile (after
    one unprofiled upload to warm it): own time by layer and the five costliest functions."""
    from django.db import connection
    from django.test import Client

    rng = np.random.default_rng(args.seed + 1)
    count = min(args.requests, args.samples)
    chunks = [
        load_point_uploads(args, attempt_id, index, chunk_records(0, count, rng))[0]
        for index in range(rounds + 1)
    ]
    client = Client()
    meta = {"HTTP_HOST": host, "HTTP_AUTHORIZATION": f"Runner {credential}"}

    def post(number: int) -> None:
        upload = chunks[number][0]
        response = client.generic(
            "POST",
            f"/api/runner/v1/attempts/{upload.attempt_id}/results",
            upload.body,
            content_type="application/json",
            HTTP_CONTENT_ENCODING="gzip",
            HTTP_IDEMPOTENCY_KEY=upload.key,
            **meta,
        )
        if response.status_code != 201:
            raise RuntimeError(f"profiled upload answered {response.status_code}")

    queries = []

    def count(execute, sql, params, many, context):  # Django's cursors; the COPY and the
        queries.append(sql)  # body's binary UPDATE use psycopg's own and are not counted
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        post(0)
    profiler, wall_ms = profile_rounds(lambda number: post(number + 1), rounds)
    upload, records = chunks[1]
    name = (
        f"of one upload ({len(records):,} records, {len(upload.body):,} bytes of gzip, "
        f"{len(queries)} queries through Django's cursors)"
    )
    return profile_lines(
        name, profiler, wall_ms, rounds, LAYERS, top=args.profile_top, unit="upload"
    )


def worker_pids(stack: PrivateStack) -> list[int]:
    """The gunicorn workers: the children of the gunicorn master this stack started."""
    master = stack.children[0].pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS


@dataclass
class Memory:
    """The largest peak a worker reached during one upload, and its resident size before it."""

    peak_kib: int = 0
    before_kib: int = 0

    def measure(self, pids: list[int]) -> Any:
        befores = {pid: _status_kib(pid, "VmRSS") for pid in pids}
        for pid in pids:
            _reset_peak(pid)
        return befores

    def update(self, pids: list[int], befores: dict[int, int]) -> None:
        for pid in pids:
            peak = _status_kib(pid, "VmHWM")
            if peak - befores[pid] > self.peak_kib - self.before_kib:
                self.peak_kib, self.before_kib = peak, befores[pid]


def timed_uploads(stack: PrivateStack, uploads: list[Upload], credential: str) -> tuple:
    """POST every chunk over one keep-alive connection; seconds in all and the memory peak."""
    pids = worker_pids(stack)
    memory = Memory()
    connection = http.client.HTTPConnection("127.0.0.1", stack.web_port, timeout=300)
    headers = {
        "Authorization": f"Runner {credential}",
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
    }
    start = perf_counter()
    for upload in uploads:
        befores = memory.measure(pids)
        connection.request(
            "POST",
            f"/api/runner/v1/attempts/{upload.attempt_id}/results",
            body=upload.body,
            headers={**headers, "Idempotency-Key": upload.key},
        )
        answer = connection.getresponse()
        text = answer.read()
        if answer.status != 201:
            raise RuntimeError(f"upload {upload.key} answered {answer.status}: {text[:500]!r}")
        memory.update(pids, befores)
    elapsed = perf_counter() - start
    connection.close()
    return elapsed, memory


def timed_copy(text: io.StringIO) -> float:
    from django.db import connection, transaction

    from apps.evidence.sample_store import copy_statement

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


def check_stored(samples: int, load_points: int) -> None:
    """Every sample stored twice over (ingest and raw) and every load point summarised."""
    from apps.evidence.models import LoadPointResult, Sample

    stored = Sample.objects.count()
    summarised = LoadPointResult.objects.exclude(summary=None).count()
    if stored != 2 * samples or summarised < load_points:
        raise RuntimeError(f"stored {stored} samples, {summarised} summaries: not all ingested")


def lines(args: argparse.Namespace, uploads: int, ingest: float, raw: float, memory: Memory):
    yield (
        f"samples: {args.samples:,} in {uploads:,} gzip chunks (at most {args.chunk:,} records "
        f"and {args.chunk_bytes:,} bytes of JSON each), "
        f"POSTed to gunicorn ({args.workers} sync worker(s)); load points of "
        f"{args.requests:,} requests"
    )
    yield f"HTTP upload (unzip, validate, COPY, summary): {ingest:.2f} s"
    yield f"raw PostgreSQL COPY of the same rows:        {raw:.2f} s"
    yield f"ratio: {ingest / raw:.2f}x  ({args.samples / ingest:,.0f} samples/s ingested)"
    yield (
        f"peak worker memory per upload: {memory.peak_kib / 1024:.0f} MiB resident "
        f"(+{(memory.peak_kib - memory.before_kib) / 1024:.1f} MiB over the "
        f"{memory.before_kib / 1024:.0f} MiB before it)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument(
        "--chunk", type=int, default=DEFAULT_UPLOAD_CHUNK_RECORDS, help="most records per chunk"
    )
    parser.add_argument(
        "--chunk-bytes", type=int, default=UPLOAD_CHUNK_BYTES, help="most JSON bytes per chunk"
    )
    parser.add_argument("--requests", type=int, default=20_000, help="requests per load point")
    parser.add_argument("--load-points", type=int, default=10, help="load points per job")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database-url", default="", help="a PostgreSQL server to use")
    parser.add_argument("--keep", action="store_true", help="keep the stack's logs")
    parser.add_argument(
        "--profile-rounds", type=int, default=3, help="uploads profiled in-process (0: none)"
    )
    parser.add_argument("--profile-top", type=int, default=5, help="costliest functions shown")
    args = parser.parse_args()
    sizes = (args.samples, args.chunk, args.chunk_bytes, args.requests, args.load_points)
    if min(*sizes, args.workers) < 1 or not 0 <= args.profile_rounds < args.load_points:
        sys.exit(
            "--samples, --chunk(-bytes), --requests, --load-points, --workers must be >= 1, "
            "--profile-rounds from 0 to below --load-points"
        )
    per_job = args.requests * args.load_points
    jobs = -(-args.samples // per_job)
    from bench_candidate_latency import throwaway_database

    with (
        throwaway_database(args.database_url) if args.database_url else nullcontext("") as url,
        private_stack(web_workers=args.workers, database_url=url, keep=args.keep) as stack,
    ):
        stack.use_django()
        # One attempt more than the measured uploads need: the profiled uploads' own.
        every_attempt, credential = claimed_attempts(jobs + 1, args.load_points, args.requests)
        *attempt_ids, spare = every_attempt
        uploads, text = prepare(args, attempt_ids, raw_result_id())
        ingest, memory = timed_uploads(stack, uploads, credential)
        raw = timed_copy(text)
        check_stored(args.samples, -(-args.samples // args.requests))
        print("\n".join(lines(args, len(uploads), ingest, raw, memory)), flush=True)
        if args.profile_rounds:
            host = f"127.0.0.1:{stack.web_port}"
            profile = where_upload_time_goes(args, host, spare, credential, args.profile_rounds)
            print("\n".join(profile))


if __name__ == "__main__":
    main()
