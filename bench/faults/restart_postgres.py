"""Restart PostgreSQL while runners upload results: every chunk must be stored once.

Two 2-GPU runners run plans of two jobs (1 and 2 x simulated H100), three load points each,
and upload results in chunks of a few records, so uploads are frequent. As soon as a plan's
first chunk is stored, PostgreSQL is stopped (`pg_ctl -m fast`: every session ends), kept down
a moment and started again. The agent retries what failed (connection errors and 5xx, with
backoff) under the same Idempotency-Key. It prints what was stored, duplicated and lost, and
how many upload calls the agents had to retry.

    .venv/bin/python bench/faults/restart_postgres.py [--restarts 3] [--down 3]
"""

from __future__ import annotations

import re
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stack import FAST_FLEET, fault_parser, private_stack, wait_for

SETTINGS = {
    **FAST_FLEET,
    "RUNNER_LEASE_SECONDS": "15",
    "STACKSELECT_RUNNER_UPLOAD_CHUNK_RECORDS": "4",
}
RATES = (4.0, 8.0, 16.0)
RETRIED_UPLOAD = re.compile(r"POST attempts/\d+/results (failed|answered \d+)")


def main() -> None:
    parser = fault_parser(__doc__, timeout_s=420)
    parser.add_argument("--restarts", type=int, default=3, help="one plan per restart")
    parser.add_argument("--down", type=float, default=3.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--requests", type=int, default=24, help="requests per load point")
    args = parser.parse_args()
    if args.restarts < 1 or args.down < 0 or args.requests < 1:
        sys.exit("--restarts and --requests must be at least 1, --down not negative")
    started = time.monotonic()
    with private_stack(SETTINGS, keep=args.keep) as stack:
        stack.use_django()
        from fleet import first_upload_stored, fleet, report, start_runners

        team = fleet(gpu_counts=(1, 2))
        runners = start_runners(stack, team, "ab", gpus=2)
        job_ids: list[int] = []
        for number in range(1, args.restarts + 1):
            plan = team.plan(requests=args.requests, rates=RATES, max_attempts=3)
            job_ids += list(plan.jobs.values_list("pk", flat=True))
            wait_for(partial(first_upload_stored, plan.pk), timeout=120,
                     what=f"plan {plan.pk}'s first upload")  # fmt: skip
            stack.restart_postgres(args.down)
            print(f"restart {number}: PostgreSQL restarted during plan {plan.pk}", flush=True)
        fault = f"PostgreSQL restarts: {args.restarts} (pg_ctl -m fast, {args.down:g} s down)"
        report(stack, job_ids, fault=fault, deadline=started + args.timeout)
        retried = sum(len(RETRIED_UPLOAD.findall(r.output())) for r in runners.values())
        print(f"upload calls the agents retried (same Idempotency-Key): {retried}")
        print(f"wall time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
