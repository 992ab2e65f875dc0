"""Peak memory of one gunicorn worker answering the largest bodies the runner API allows.

Starts the app under gunicorn with one worker on a private PostgreSQL cluster and Redis
(bench/faults/stack.py), enrolls a simulated runner over HTTP and gives it a claimed attempt
of a plan with the most requests a plan may have, then sends, one at a time:

- anonymous enroll bodies: the largest allowed (RUNNER_SMALL_BODY_MAX_BYTES of `[]` items, the
  shape that cost 377 MB at 16 MB) and a 16 MB one (refused unread);
- result uploads: the largest valid chunk (every request of the plan, its gaps filling the
  unzipped limit), a gzip bomb that unzips past BENCHMARK_UPLOAD_MAX_RAW_BYTES, and a body at
  the gzip limit BENCHMARK_UPLOAD_MAX_BYTES that is not JSON.

Before each request the worker's peak-RSS mark is reset (`/proc/<pid>/clear_refs` = 5); after
it, VmHWM is that request's peak. Each rise above the RSS the worker had just before is held
against its stated bound, printed with the figure; the script exits 1 when one is over.

    .venv/bin/python bench/bench_memory.py
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))

from stack import private_stack

MIB = 1024 * 1024
MODEL = "llama-3.1-8b"
RATE_RPS = 100.0
# A chunk of the largest valid size, and the bounds each kind of request must stay within
# (rise of the worker's RSS during the request, over its RSS just before it).
BOUNDS_MIB = {"enroll": 32, "refused upload": 160, "largest valid chunk": 1536}


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # a key of BOUNDS_MIB
    path: str
    body: bytes
    headers: dict[str, str]


def worker_pid(master_pid: int) -> int:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    if len(children) != 1:
        raise RuntimeError(f"expected one gunicorn worker, found {children}")
    return int(children[0])


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/{pid}/status")


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as error:
        error.read()
        return error.code


def measured(url: str, pid: int, probe: Probe) -> tuple[int, float, float]:
    """(HTTP status, peak RSS MiB, rise over the RSS before) of one request."""
    before = status_kib(pid, "VmRSS")
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    code = post(url + probe.path, probe.body, probe.headers)
    peak = status_kib(pid, "VmHWM")
    return code, peak / 1024, (peak - before) / 1024


def attempt_for_runner(stack, token: str) -> tuple[int, str, int]:
    """Enroll a simulated runner over HTTP; a plan of the most requests a plan may have;
    returns (attempt id, runner credential, requests per load point)."""
    from apps.accounts.models import Membership, Team
    from apps.benchmarks.models import JobAttempt
    from apps.benchmarks.plan_identity import MAX_REQUEST_COUNT, PlanOptions
    from apps.benchmarks.services import plan_create
    from apps.catalog.models import ModelSpec
    from apps.selections.models import Selection
    from apps.selections.services import candidates_choose, candidates_compute
    from tests.benchmarks.factories import simulated_probe

    team = Team.objects.get(slug="bench-memory")
    user = Membership.objects.get(team=team).user
    selection = Selection.objects.create(
        team=team,
        title="Memory bench",
        created_by=user,
        model=ModelSpec.objects.get(slug=MODEL),
        workload={
            "precision": "bf16",
            "isl": {"kind": "fixed", "value": 512},
            "osl": {"kind": "fixed", "value": 128},
            "arrival": {"process": "poisson", "rate_rps": 4},
        },
        slo={"ttft_ms": 1000, "tpot_ms": 60},
        constraints={"max_gpus": 1},
    )
    selection = candidates_compute(actor_user=user, selection=selection)
    first = selection.candidates.filter(outcome="kept").order_by("rank").first()
    candidates_choose(actor_user=user, selection=selection, candidate_ids=[first.pk])
    enroll = {
        "token": token,
        "name": "bench-memory",
        "probe": simulated_probe(
            accelerator=first.accelerator.slug, gpu_count=first.stack["gpu_count"]
        ),
    }
    request = urllib.request.Request(
        f"{stack.url}/api/runner/v1/enroll",
        data=json.dumps(enroll).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        credential = json.loads(answer.read())["credential"]
    options = PlanOptions(
        run_mode="simulated", request_count=MAX_REQUEST_COUNT, load_points=({"rate_rps": RATE_RPS},)
    )
    plan = plan_create(actor_user=user, team=team, selection_id=selection.pk, options=options)
    attempt = JobAttempt.objects.filter(job__plan=plan).order_by("pk").first()
    claim = urllib.request.Request(
        f"{stack.url}/api/runner/v1/attempts/{attempt.pk}/claim",
        data=b"{}",
        headers={"Content-Type": "application/json", "Authorization": f"Runner {credential}"},
    )
    with urllib.request.urlopen(claim, timeout=60) as answer:
        answer.read()
    return attempt.pk, credential, MAX_REQUEST_COUNT


def largest_valid_chunk(requests: int, raw_limit: int) -> bytes:
    """Every request of the load point, consistent (gaps fill e2e - ttft, sends inside the
    window), with as many gaps each as fit the unzipped limit."""
    overhead = 200  # bytes of a record besides its gaps
    gaps = max(1, int((raw_limit * 0.95 / requests - overhead) / len("0.01,")))
    itl = [0.01] * gaps
    records = [
        {
            "index": i,
            "send_s": i / RATE_RPS,
            "ttft_s": 0.05,
            "itl_s": itl,
            "e2e_s": round(0.05 + 0.01 * gaps, 6),
            "input_tokens": 512,
            "output_tokens": gaps + 1,
            "error": None,
            "status": 200,
        }
        for i in range(requests)
    ]
    document = {
        "load_point_index": 0,
        "load_point": {"index": 0, "rate_rps": RATE_RPS},
        "started_at": "2026-01-01T00:00:00Z",
        "duration_s": requests / RATE_RPS + 0.05 + 0.01 * gaps,
        "chunk_index": 0,
        "chunk_count": 1,
        "engine": {"version": "sim-0.1", "effective_config": {}},
        "harness": {"name": "stackselect-harness", "version": "0.1"},
        "records": records,
    }
    raw = json.dumps(document, separators=(",", ":")).encode()
    if len(raw) > raw_limit:
        raise RuntimeError(f"the chunk is {len(raw)} bytes, over the limit {raw_limit}")
    return raw


def probes(settings, attempt_id: int, credential: str, requests: int) -> list[Probe]:
    small = settings.RUNNER_SMALL_BODY_MAX_BYTES
    json_headers = {"Content-Type": "application/json"}
    upload_headers = {
        **json_headers,
        "Authorization": f"Runner {credential}",
        "Content-Encoding": "gzip",
    }
    results = f"/api/runner/v1/attempts/{attempt_id}/results"
    raw_limit = settings.BENCHMARK_UPLOAD_MAX_RAW_BYTES
    chunk = largest_valid_chunk(requests, raw_limit)
    return [
        Probe(
            "enroll, limit of `[]` items",
            "enroll",
            "/api/runner/v1/enroll",
            b"[" + b"[]," * ((small - 4) // 3) + b"[]]",
            json_headers,
        ),
        Probe(
            "enroll, 16 MB of `[]` items",
            "enroll",
            "/api/runner/v1/enroll",
            b"[" + b"[]," * (16 * MIB // 3) + b"[]]",
            json_headers,
        ),
        Probe(
            "upload, gzip bomb past the unzipped limit",
            "refused upload",
            results,
            gzip.compress(b" " * (raw_limit + MIB)),
            {**upload_headers, "Idempotency-Key": "b"},
        ),
        Probe(
            "upload, gzip limit of random bytes",
            "refused upload",
            results,
            gzip.compress(os.urandom(settings.BENCHMARK_UPLOAD_MAX_BYTES - 64 * 1024)),
            {**upload_headers, "Idempotency-Key": "r"},
        ),
        Probe(
            f"upload, largest valid chunk ({len(chunk) / MIB:.0f} MiB unzipped, "
            f"{requests} records)",
            "largest valid chunk",
            results,
            gzip.compress(chunk),
            {**upload_headers, "Idempotency-Key": "v"},
        ),
    ]


def main() -> None:
    failed = False
    settings = {"API_THROTTLE_ENABLED": "false"}
    with private_stack(settings, web_workers=1, web_timeout_s=600) as stack:
        stack.manage("load_curated")
        stack.use_django()
        from django.conf import settings as django_settings
        from django.contrib.auth import get_user_model

        from apps.accounts.models import Membership, Team
        from apps.runners.services import enrollment_token_create

        team = Team.objects.create(slug="bench-memory", name="Memory bench")
        user = get_user_model().objects.create_user("bench-memory", password=None)
        Membership.objects.create(user=user, team=team, role="admin")
        _, token = enrollment_token_create(actor_user=user, team=team)
        attempt_id, credential, requests = attempt_for_runner(stack, token)
        pid = worker_pid(stack.children[0].pid)
        print(f"gunicorn worker {pid}: {status_kib(pid, 'VmRSS') / 1024:.0f} MiB RSS at rest")
        for probe in probes(django_settings, attempt_id, credential, requests):
            code, peak, rise = measured(stack.url, pid, probe)
            bound = BOUNDS_MIB[probe.kind]
            verdict = "ok" if rise <= bound else "OVER"
            failed |= rise > bound
            print(
                f"{probe.name:<58} {len(probe.body) / MIB:7.2f} MiB sent -> {code}  "
                f"peak {peak:6.0f} MiB, rise {rise:6.0f} MiB (bound {bound} MiB) {verdict}"
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
