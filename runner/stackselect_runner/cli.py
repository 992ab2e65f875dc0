"""`stackselect-runner` command line.

`bench` measures any OpenAI-compatible server from a request file, with no StackSelect
server; `enroll`, `start` and `status` (agent.py) make this host a runner of a team's fleet.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import stackselect_runner
from stackselect_runner.agent import CommandError, add_agent_commands
from stackselect_runner.harness import HarnessSpec, LoadPoint, run_load_point
from stackselect_runner.terminal import end_progress_line, progress_printer, summary_line


def _load_job_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The requests file holds a request list or a whole job spec; flags override its fields."""
    try:
        loaded = json.loads(Path(args.requests).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--requests: cannot read {args.requests}: {exc}") from exc
    job_spec = dict(loaded) if isinstance(loaded, dict) else {"requests": loaded}
    job_spec["engine"] = {**job_spec.get("engine", {}), "served_model_name": args.model}
    harness = dict(job_spec.get("harness", {}))
    overrides = {
        "endpoint": args.endpoint,
        "warmup_requests": args.warmup,
        "timeout_s": args.timeout,
        "shared_prefix_tokens": args.shared_prefix_tokens,
        "prompt_seed": args.prompt_seed,
        "ignore_eos": False if args.no_ignore_eos else None,
        "min_tokens": True if args.min_tokens else None,
    }
    harness.update({key: value for key, value in overrides.items() if value is not None})
    job_spec["harness"] = harness
    return job_spec


def _load_points(args: argparse.Namespace, job_spec: dict[str, Any]) -> list[LoadPoint]:
    if args.rate:
        return [LoadPoint(rate_rps=rate, index=i) for i, rate in enumerate(args.rate)]
    if args.concurrency:
        return [LoadPoint(concurrency=c, index=i) for i, c in enumerate(args.concurrency)]
    points = job_spec.get("load_points")
    if not isinstance(points, list) or not points:
        raise ValueError("give --rate or --concurrency, or load_points in the requests file")
    return [LoadPoint.from_dict(point) for point in points]


def bench(args: argparse.Namespace) -> None:
    job_spec = _load_job_spec(args)
    spec = HarnessSpec.from_job_spec(job_spec, args.engine_url)
    points = _load_points(args, job_spec)
    results: list[dict[str, Any]] = []
    for point in points:
        result = run_load_point(
            spec, point, on_progress=progress_printer(point.label(), sys.stderr)
        )
        end_progress_line(sys.stderr)
        print(summary_line(result), flush=True)
        results.append(result.as_dict())
    report = {
        "engine_url": spec.engine_url,
        "model": spec.model,
        "endpoint": spec.endpoint,
        "load_points": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stackselect-runner")
    version = f"stackselect-runner {stackselect_runner.__version__}"
    parser.add_argument("--version", action="version", version=version)
    commands = parser.add_subparsers(dest="command", required=True)
    bench_parser = commands.add_parser(
        "bench", help="measure an OpenAI-compatible server with a request schedule"
    )
    bench_parser.add_argument("--engine-url", required=True, help="e.g. http://127.0.0.1:8000")
    bench_parser.add_argument("--model", required=True)
    bench_parser.add_argument("--requests", required=True, help="JSON request list or job spec")
    load = bench_parser.add_mutually_exclusive_group()
    load.add_argument("--rate", type=float, nargs="+", help="open-loop request rate(s), req/s")
    load.add_argument("--concurrency", type=int, nargs="+", help="closed-loop concurrency(ies)")
    bench_parser.add_argument("--out", required=True, help="where to write results JSON")
    bench_parser.add_argument("--endpoint", choices=["completions", "chat"])
    bench_parser.add_argument("--warmup", type=int, help="warm-up requests per load point")
    bench_parser.add_argument("--timeout", type=float, help="per-request timeout, seconds")
    bench_parser.add_argument("--shared-prefix-tokens", type=int)
    bench_parser.add_argument("--prompt-seed", type=int)
    bench_parser.add_argument("--no-ignore-eos", action="store_true")
    bench_parser.add_argument("--min-tokens", action="store_true", help="send min_tokens=max")
    bench_parser.set_defaults(handler=bench)
    add_agent_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args)
    except CommandError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        sys.exit(1)
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
