"""CPU time per request and timing error: our load harness against guidellm, AIPerf and
inference-perf, all live against one server in this run.

The server is the simulated engine with a step cost of exactly `--step-ms` per engine step
(nothing per token), so its true inter-token latency is known: every gap between two streamed
tokens of a request is one step. Every harness sends the same workload: `--requests` streamed
/v1/completions requests (default 1,000) at concurrency `--concurrency`, 64 prompt tokens,
16 output tokens with ignore_eos. Each command runs twice, with `--requests` and with a tenth
of them, so that besides the whole command's CPU (user + system of it and its children,
start-up included) the steady-state CPU per request is the difference of the two over the
difference of their request counts. Timing error is each harness's own median ITL, read from
its output files by our importers (apps/evidence/importers), minus the step time.

The tools run from benchmark-only venvs (/tmp/tools-guidellm, /tmp/tools-aiperf, /tmp/tools-ip;
bench/README.md) with an offline tokenizer (/tmp/evtok/tokenizer, made by
bench/make_offline_tokenizer.py); a tool that is not installed, or whose run fails, is printed
as "not measured".

    .venv/bin/python bench/bench_harness_compare.py [--requests 1000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "runner"))
sys.path.insert(0, str(ROOT))

from stackselect_runner.engines import (  # noqa: E402
    LaunchSpec,
    SimulatedEngineAdapter,
    free_loopback_port,
)

from apps.evidence.importers import (  # noqa: E402
    import_aiperf,
    import_guidellm,
    import_inference_perf,
    read_json_lines,
)
from apps.evidence.schema import LoadPoint, LoadPointSamples  # noqa: E402

TOKENIZER = Path("/tmp/evtok/tokenizer")
MODEL = "sim-model"
INPUT_TOKENS, OUTPUT_TOKENS = 64, 16


@dataclass(frozen=True)
class Workload:
    requests: int
    concurrency: int


@dataclass(frozen=True)
class Run:
    """One command: its CPU seconds and the inter-token gaps it measured (None: unknown)."""

    cpu_s: float
    itl_s: np.ndarray | None


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_command(command: list[str], cwd: Path, env: dict[str, str]) -> float | None:
    """CPU seconds of a command and its waited-for children; None when it fails."""
    before = children_cpu()
    with (cwd / "output.log").open("w") as log:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    return children_cpu() - before if done.returncode == 0 else None


def executable(venv: str, name: str) -> str | None:
    in_venv = Path(venv) / "bin" / name
    return str(in_venv) if in_venv.exists() else shutil.which(name)


def _gaps(samples: list[LoadPointSamples]) -> np.ndarray:
    return np.concatenate([point.itl_gaps for point in samples])


def _read(read: Callable[[], np.ndarray]) -> np.ndarray | None:
    """The gaps a tool's files hold; None when they cannot be read (printed, never guessed)."""
    try:
        return read()
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"  (its output could not be read: {error})", file=sys.stderr)
        return None


def guidellm(url: str, workdir: Path, load: Workload) -> Run | None:
    command = executable("/tmp/tools-guidellm", "guidellm")
    if command is None:
        return None
    spec = {
        "backend": {
            "kind": "openai_http",
            "target": url,
            "model": MODEL,
            "request_format": "/v1/completions",
        },
        "tokenizer": {"kind": "huggingface_auto", "model": str(TOKENIZER)},
        "profile": {"kind": "concurrent", "streams": [load.concurrency]},
        "data": [
            {
                "kind": "synthetic_text",
                "prompt_tokens": INPUT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
            }
        ],
        "constraints": [{"kind": "max_requests", "count": load.requests}],
        "seed": {"kind": "static", "value": 42},
        "outputs": [{"kind": "json", "path": str(workdir / "benchmarks.json")}],
    }
    (workdir / "scenario.json").write_text(json.dumps({"spec": spec}))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = [command, "run", "--scenario", "scenario.json", "--disable-console-interactive"]
    cpu = timed_command(run, workdir, env)
    if cpu is None:
        return None
    report = workdir / "benchmarks.json"
    return Run(
        cpu, _read(lambda: _gaps(import_guidellm(json.loads(report.read_text())).load_points))
    )


def _aiperf_gaps(out: Path) -> np.ndarray:
    summary = next(out.rglob("profile_export_aiperf.json"))
    records = read_json_lines(next(out.rglob("profile_export.jsonl")).read_text())
    return _gaps(import_aiperf(json.loads(summary.read_text()), records).load_points)


def aiperf(url: str, workdir: Path, load: Workload) -> Run | None:
    command = executable("/tmp/tools-aiperf", "aiperf")
    if command is None:
        return None
    # AIPerf 0.13 refuses a local tokenizer folder in offline mode (tests/evidence/data).
    env = {key: value for key, value in os.environ.items() if key != "HF_HUB_OFFLINE"}
    run = [
        command, "profile", "--model", MODEL, "--url", url, "--endpoint-type", "completions",
        "--streaming", "--tokenizer", str(TOKENIZER), "--concurrency", str(load.concurrency),
        "--request-count", str(load.requests), "--isl", str(INPUT_TOKENS), "--isl-stddev", "0",
        "--osl", str(OUTPUT_TOKENS), "--extra-inputs", "ignore_eos:true", "--random-seed", "42",
        "--artifact-dir", str(workdir / "out"), "--ui", "none", "--no-server-metrics",
        "--no-gpu-telemetry",
    ]  # fmt: skip
    cpu = timed_command(run, workdir, env)
    return None if cpu is None else Run(cpu, _read(lambda: _aiperf_gaps(workdir / "out")))


def _inference_perf_gaps(out: Path, load: Workload) -> np.ndarray:
    summary = json.loads(next(out.rglob("summary_lifecycle_metrics.json")).read_text())
    per_request = json.loads(next(out.rglob("per_request_lifecycle_metrics.json")).read_text())
    point = LoadPoint(concurrency=load.concurrency)
    return _gaps(import_inference_perf(summary, per_request, load_point=point).load_points)


def inference_perf(url: str, workdir: Path, load: Workload) -> Run | None:
    command = executable("/tmp/tools-ip", "inference-perf")
    if command is None:
        return None
    lengths = {"min": 0, "max": 0, "mean": 0, "std_dev": 0, "total_count": load.requests}
    config = {
        "api": {"type": "completion", "streaming": True},
        "data": {
            "type": "random",
            "input_distribution": {
                **lengths,
                **dict.fromkeys(("min", "max", "mean"), INPUT_TOKENS),
            },
            "output_distribution": {
                **lengths,
                **dict.fromkeys(("min", "max", "mean"), OUTPUT_TOKENS),
            },
        },
        "load": {
            "type": "concurrent",
            "num_workers": 1,
            "stages": [{"num_requests": load.requests, "concurrency_level": load.concurrency}],
        },
        "server": {"type": "vllm", "model_name": MODEL, "base_url": url, "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": str(TOKENIZER)},
        "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
        "storage": {"local_storage": {"path": str(workdir / "out")}},
    }
    # JSON is valid YAML, so no YAML writer is needed here.
    (workdir / "config.yml").write_text(json.dumps(config))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cpu = timed_command([command, "-c", "config.yml"], workdir, env)
    if cpu is None:
        return None
    return Run(cpu, _read(lambda: _inference_perf_gaps(workdir / "out", load)))


def ours(url: str, workdir: Path, load: Workload) -> Run | None:
    """`stackselect-runner bench` in a fresh interpreter, start-up included like the tools."""
    requests = [
        {"index": i, "arrival_s": float(i), "input_tokens": INPUT_TOKENS,
         "output_tokens": OUTPUT_TOKENS}
        for i in range(load.requests)
    ]  # fmt: skip
    (workdir / "requests.json").write_text(json.dumps(requests))
    run = [
        sys.executable, "-m", "stackselect_runner.cli", "bench", "--engine-url", url,
        "--model", MODEL, "--requests", str(workdir / "requests.json"),
        "--concurrency", str(load.concurrency), "--warmup", "0",
        "--out", str(workdir / "results.json"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "runner")}
    cpu = timed_command(run, workdir, env)
    if cpu is None:
        return None
    report = json.loads((workdir / "results.json").read_text())
    gaps = [gap for point in report["load_points"] for r in point["records"] for gap in r["itl_s"]]
    return Run(cpu, np.array(gaps, dtype=float))


HARNESSES: dict[str, Callable[[str, Path, Workload], Run | None]] = {
    "ours": ours,
    "guidellm": guidellm,
    "aiperf": aiperf,
    "inference-perf": inference_perf,
}


@dataclass(frozen=True)
class Figures:
    whole_ms: float  # CPU per request of the whole command
    steady_ms: float  # CPU per extra request between the small and the full run
    itl_error_ms: float | None  # median measured ITL minus the true step time


def measure(name: str, url: str, root: Path, full: Workload, small: Workload, step_s: float):
    runs = []
    for load in (small, full):
        folder = root / f"{name}-{load.requests}"
        folder.mkdir()
        runs.append(HARNESSES[name](url, folder, load) if TOKENIZER.exists() else None)
    if runs[0] is None or runs[1] is None:
        return None
    steady = (runs[1].cpu_s - runs[0].cpu_s) / (full.requests - small.requests)
    gaps = runs[1].itl_s
    error = None if gaps is None or not gaps.size else (np.median(gaps) - step_s) * 1e3
    return Figures(runs[1].cpu_s / full.requests * 1e3, steady * 1e3, error)


def known_latency_engine(root: Path, step_s: float):
    """The simulated engine, every step exactly `step_s` (no per-token cost)."""
    cost = {
        "weight_bytes": 0.0, "kv_bytes_per_token": 0.0, "flops_per_token": 0.0,
        "attn_flops_per_token_ctx": 0.0, "hbm_bytes_per_s": 1.0, "flops_per_s": 1.0,
        "comm_s_per_token": 0.0, "step_overhead_s": step_s,
    }  # fmt: skip
    launch = LaunchSpec(
        model=MODEL,
        port=free_loopback_port(),
        log_path=root / "engine.log",
        options={"seed": 0, "step_cost": cost},
    )
    return launch, SimulatedEngineAdapter().start(launch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--step-ms", type=float, default=10.0, help="the engine's step time")
    args = parser.parse_args()
    if args.requests < 20 or args.concurrency < 1 or not args.step_ms > 0:
        sys.exit("--requests must be >= 20, --concurrency >= 1, --step-ms > 0")
    full = Workload(args.requests, args.concurrency)
    small = Workload(max(args.requests // 10, args.concurrency), args.concurrency)
    step_s = args.step_ms / 1e3
    results: dict[str, Figures | None] = {}
    with tempfile.TemporaryDirectory() as workdir:
        launch, engine_context = known_latency_engine(Path(workdir), step_s)
        with engine_context as engine:
            engine.wait_ready(timeout_s=30)
            for name in HARNESSES:
                results[name] = measure(name, launch.base_url, Path(workdir), full, small, step_s)
    print(
        f"{full.requests} requests (and {small.requests} for the steady state), concurrency "
        f"{full.concurrency}, {INPUT_TOKENS} in / {OUTPUT_TOKENS} out; engine step "
        f"{args.step_ms:g} ms, so every true ITL is {args.step_ms:g} ms"
    )
    print(f"{'harness':<16}{'whole ms/req':>13}{'steady ms/req':>15}{'ITL p50 error':>15}")
    for name, figures in results.items():
        if figures is None:
            print(f"{name:<16}{'not measured':>13}")
            continue
        error = "n/a" if figures.itl_error_ms is None else f"{figures.itl_error_ms:+.2f} ms"
        print(f"{name:<16}{figures.whole_ms:>13.2f}{figures.steady_ms:>15.3f}{error:>15}")
    mine = results["ours"]
    for name, figures in results.items():
        if name == "ours" or mine is None:
            continue
        if figures is None:
            print(f"ours / {name:<16} not measured")
        else:
            print(
                f"ours / {name:<16} {mine.whole_ms / figures.whole_ms:6.1%} (whole command), "
                f"{mine.steady_ms / figures.steady_ms:6.1%} (steady state)"
            )


if __name__ == "__main__":
    main()
