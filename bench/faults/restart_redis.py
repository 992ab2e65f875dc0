"""Restart Redis (without persistence) while plans run: queued jobs must still finish, once.

Each plan has one job per GPU count (1, 2, 4, 8 x simulated H100) and two 8-GPU runners take
them two at a time, so while the first two run the others wait as messages in Redis. Once a
job is running, Redis is shut down with `nosave` (its queues are gone, as after a crash), kept
down a moment and started empty. The reaper loop re-sends attempts that stayed unclaimed for
RUNNER_REDISPATCH_AFTER_S (10 s); the runners' workers reconnect on their own.

    .venv/bin/python bench/faults/restart_redis.py [--restarts 3] [--down 2]
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stack import FAST_FLEET, fault_parser, private_stack, wait_for

GPU_COUNTS = (1, 2, 4, 8)


def main() -> None:
    parser = fault_parser(__doc__, timeout_s=420)
    parser.add_argument("--restarts", type=int, default=3, help="one plan per restart")
    parser.add_argument("--down", type=float, default=2.0, help="seconds Redis stays down")
    parser.add_argument("--requests", type=int, default=12, help="requests per job")
    parser.add_argument("--rate", type=float, default=4.0, help="the jobs' load point, req/s")
    args = parser.parse_args()
    if args.restarts < 1 or args.down < 0 or args.requests < 1 or args.rate <= 0:
        sys.exit("--restarts and --requests must be at least 1, --down >= 0, --rate positive")
    started = time.monotonic()
    with private_stack({**FAST_FLEET, "RUNNER_LEASE_SECONDS": "10"}, keep=args.keep) as stack:
        stack.use_django()
        from fleet import any_running, fleet, report, start_runners

        team = fleet(gpu_counts=GPU_COUNTS)
        start_runners(stack, team, "ab", gpus=8)
        job_ids: list[int] = []
        for number in range(1, args.restarts + 1):
            plan = team.plan(requests=args.requests, rates=[args.rate], max_attempts=3)
            jobs = list(plan.jobs.values_list("pk", flat=True))
            job_ids += jobs
            wait_for(partial(any_running, jobs), timeout=90,
                     what=f"plan {plan.pk} to start")  # fmt: skip
            stack.restart_redis(args.down)
            print(f"restart {number}: Redis restarted empty while plan {plan.pk} ran", flush=True)
        fault = f"Redis restarts: {args.restarts} (shutdown nosave, {args.down:g} s down)"
        report(stack, job_ids, fault=fault, deadline=started + args.timeout)
        print(f"wall time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
