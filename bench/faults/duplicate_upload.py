"""Send the same result upload 100 times through the runner API: it must be stored once.

A runner is enrolled and claims the attempt of a one-job plan (no agent process: this script
is the runner). It then POSTs one gzip chunk with one Idempotency-Key `--sends` times from
`--concurrency` threads at once, so the first copies race each other, and finally the same chunk
under a new key, which must be refused as `duplicate_chunk`. It prints the answers by status
and what the database holds: upload rows, evidence samples and audit events.

    .venv/bin/python bench/faults/duplicate_upload.py [--sends 100] [--concurrency 10]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stack import private_stack

REQUESTS = 4


def post(url: str, credential: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    """One runner API call; the status and JSON answer, whatever the status."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Authorization": f"Runner {credential}", "Content-Type": "application/json",
                 **headers},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        with error:
            text = error.read()
        try:
            return error.code, json.loads(text or b"{}")
        except ValueError:
            return error.code, {"body": text[:200].decode(errors="replace")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--keep", action="store_true", help="keep the logs folder")
    args = parser.parse_args()
    if args.sends < 1 or args.concurrency < 1:
        sys.exit("--sends and --concurrency must be at least 1")
    started = time.monotonic()
    with private_stack(keep=args.keep) as stack:
        stack.use_django()
        from fleet import fleet

        from apps.audit.models import AuditEvent
        from apps.benchmarks.models import ResultUpload
        from apps.evidence.models import EvidenceRun, Sample
        from tests.benchmarks.factories import enrolled_runner, result_document

        team = fleet()
        _, credential = enrolled_runner(team.admin, team.team, name="scripted")
        plan = team.plan(requests=REQUESTS, rates=[1.0], max_attempts=1)
        attempt = plan.jobs.get().attempts.get()
        base = f"{stack.url}/api/runner/v1/attempts/{attempt.pk}"
        claimed, answer = post(f"{base}/claim", credential, b"{}", {})
        if claimed != 200:
            sys.exit(f"claim answered {claimed}: {answer}")

        body = gzip.compress(json.dumps(result_document(0)).encode())
        headers = {"Content-Encoding": "gzip", "Idempotency-Key": f"attempt-{attempt.pk}.lp-0.c-0"}
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            answers = list(
                pool.map(lambda _: post(f"{base}/results", credential, body, headers),
                         range(args.sends))
            )  # fmt: skip
        statuses = Counter(status for status, _ in answers)
        upload_ids = {answer.get("upload_id") for _, answer in answers}
        other_key = {**headers, "Idempotency-Key": f"attempt-{attempt.pk}.other-key"}
        refused, refusal = post(f"{base}/results", credential, body, other_key)

        uploads = ResultUpload.objects.filter(attempt=attempt)
        audit = AuditEvent.objects.filter(action="result_upload.create")
        print(f"sends: {args.sends} of one chunk under one key, {args.concurrency} at a time")
        print(f"answers: {dict(sorted(statuses.items()))}  (distinct upload ids: {upload_ids})")
        print(f"same chunk, another key: HTTP {refused} {refusal.get('code', refusal)}")
        print(
            f"stored: {uploads.count()} upload row(s), "
            f"{EvidenceRun.objects.filter(attempt=attempt).count()} evidence run(s), "
            f"{Sample.objects.filter(result__run__attempt=attempt).count()} sample(s) "
            f"for {REQUESTS} requests, {audit.count()} audit event(s) result_upload.create"
        )
        print(f"wall time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
