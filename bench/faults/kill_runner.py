"""Kill a runner mid-job, again and again: every job must still finish once, none twice.

Two simulated runners serve one team. Each round starts a one-job plan, waits until a runner is
running it, SIGKILLs that runner's agent (its engine dies with it) a moment later, and starts the
agent again at once. Leases are short (RUNNER_LEASE_SECONDS=5, heartbeats every second) and a
reaper loop runs every second, so the lost attempt is re-dispatched and either runner finishes
it. At the end it prints finished, duplicated and lost jobs and how long recovery took.

    .venv/bin/python bench/faults/kill_runner.py [--kills 20] [--requests 12] [--rate 4]
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stack import FAST_FLEET, fault_parser, private_stack


def main() -> None:
    parser = fault_parser(__doc__, timeout_s=480)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--requests", type=int, default=12, help="requests per job")
    parser.add_argument("--rate", type=float, default=4.0, help="the job's one load point, req/s")
    parser.add_argument("--seed", type=int, default=0, help="for the moment of each kill")
    args = parser.parse_args()
    if args.kills < 1 or args.requests < 1 or args.rate <= 0:
        sys.exit("--kills and --requests must be at least 1, --rate positive")
    started = time.monotonic()
    with private_stack({**FAST_FLEET, "RUNNER_LEASE_SECONDS": "5"}, keep=args.keep) as stack:
        stack.use_django()
        from fleet import fleet, report, start_runners
        from kills import kill_rounds

        team = fleet()
        runners = start_runners(stack, team, "ab", gpus=1)
        kills = kill_rounds(team, runners, args, random.Random(args.seed), started)
        fault = f"kills: {len(kills)} (SIGKILL to the agent's process group, mid-job)"
        report(stack, [kill.job_id for kill in kills], fault=fault, deadline=started + args.timeout)
        recoveries = [seconds for kill in kills if (seconds := kill.recovery_s()) is not None]
        if recoveries:
            print(
                f"kill to job finished: median {statistics.median(recoveries):.1f} s, "
                f"max {max(recoveries):.1f} s"
            )
        print(f"wall time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
