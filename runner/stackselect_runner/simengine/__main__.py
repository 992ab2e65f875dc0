"""`python -m stackselect_runner.simengine`: run the simulated engine as a server process."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from aiohttp import web

from stackselect_runner.simengine.server import SHUTDOWN_TIMEOUT_S, EngineConfig, build_app
from stackselect_runner.simengine.stepcost import DEFAULT_STEP_COST, StepCost


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m stackselect_runner.simengine",
        description="Simulated OpenAI-compatible engine (timing from the step-cost model).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="simulated-model")
    parser.add_argument(
        "--step-cost-json",
        help="step_cost as inline JSON or a path to a JSON file (default: ~8B model, one H100)",
    )
    parser.add_argument("--max-num-seqs", type=int, default=256)
    parser.add_argument("--max-num-batched-tokens", type=int, default=8192)
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="real seconds per modelled second (0.1 = ten times faster than modelled)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for early-stop points")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        step_cost = (
            StepCost.from_json_or_file(args.step_cost_json)
            if args.step_cost_json
            else DEFAULT_STEP_COST
        )
        config = EngineConfig(
            model=args.model,
            step_cost=step_cost,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=args.max_num_batched_tokens,
            time_scale=args.time_scale,
            seed=args.seed,
        )
        app = build_app(config)
    except (OSError, ValueError) as exc:
        sys.exit(f"simengine: {exc}")
    # What a GPU engine would be pinned to; printed so the runner's pinning can be checked.
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    print(
        f"simengine: CUDA_VISIBLE_DEVICES={visible if visible is not None else '(unset)'}",
        flush=True,
    )
    web.run_app(
        app,
        host=args.host,
        port=args.port,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        print=lambda message: print(message, flush=True),
    )


if __name__ == "__main__":
    main()
