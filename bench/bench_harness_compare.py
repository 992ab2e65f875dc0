"""CPU time per request: our load harness against guidellm, AIPerf and inference-perf.

One workload for all (tests/evidence/data/README.md): 24 streamed /v1/completions requests at
concurrency 1, 64 prompt tokens, 16 output tokens with ignore_eos, against the simulated engine
(default step cost, time scale 1.0) in a subprocess. CPU is user + system of the whole command
(resource.getrusage of waited-for children, as /usr/bin/time -v reports it), start-up included,
so every figure is measured the same way. Ours is also shown for the measurement window alone
(in this process), where start-up is left out.

A tool runs live when its venv (/tmp/tools-guidellm, /tmp/tools-aiperf, /tmp/tools-ip) or its
command on PATH, and the offline tokenizer (/tmp/evtok/tokenizer), exist; otherwise its figure
is the one recorded in tests/evidence/data/README.md, marked "recorded".

    .venv/bin/python bench/bench_harness_compare.py [--recorded]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "runner"))

from stackselect_runner.engines import (  # noqa: E402
    LaunchSpec,
    SimulatedEngineAdapter,
    free_loopback_port,
)
from stackselect_runner.harness import HarnessSpec, LoadPoint, run_load_point  # noqa: E402

README = ROOT / "tests" / "evidence" / "data" / "README.md"
TOKENIZER = Path("/tmp/evtok/tokenizer")
MODEL = "sim-model"
REQUESTS, INPUT_TOKENS, OUTPUT_TOKENS = 24, 64, 16


@dataclass(frozen=True)
class Figure:
    name: str
    cpu_s: float
    source: str  # "live" or "recorded"

    @property
    def per_request_ms(self) -> float:
        return self.cpu_s / REQUESTS * 1000


def recorded_cpu_seconds() -> dict[str, float]:
    """Tool -> total CPU seconds, read from the README's "CPU time of the tools" table."""
    text = README.read_text()
    table = text[text.index("## CPU time of the tools") :]
    figures = {}
    for row in re.findall(r"^\| ([a-z-]+) [\d.]+ \|(.+)$", table, flags=re.MULTILINE):
        cells = [cell.strip() for cell in row[1].split("|")]
        figures[row[0]] = float(cells[2])
    return figures


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


def guidellm(url: str, workdir: Path) -> float | None:
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
        "profile": {"kind": "concurrent", "streams": [1]},
        "data": [
            {
                "kind": "synthetic_text",
                "prompt_tokens": INPUT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
            }
        ],
        "constraints": [{"kind": "max_requests", "count": REQUESTS}],
        "seed": {"kind": "static", "value": 42},
        "outputs": [{"kind": "json", "path": str(workdir / "benchmarks.json")}],
    }
    (workdir / "scenario.json").write_text(json.dumps({"spec": spec}))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = [command, "run", "--scenario", "scenario.json", "--disable-console-interactive"]
    return timed_command(run, workdir, env)


def aiperf(url: str, workdir: Path) -> float | None:
    command = executable("/tmp/tools-aiperf", "aiperf")
    if command is None:
        return None
    # AIPerf 0.13 refuses a local tokenizer folder in offline mode (see the README).
    env = {key: value for key, value in os.environ.items() if key != "HF_HUB_OFFLINE"}
    run = [
        command,
        "profile",
        "--model",
        MODEL,
        "--url",
        url,
        "--endpoint-type",
        "completions",
        "--streaming",
        "--tokenizer",
        str(TOKENIZER),
        "--concurrency",
        "1",
        "--request-count",
        str(REQUESTS),
        "--isl",
        str(INPUT_TOKENS),
        "--isl-stddev",
        "0",
        "--osl",
        str(OUTPUT_TOKENS),
        "--extra-inputs",
        "ignore_eos:true",
        "--random-seed",
        "42",
        "--artifact-dir",
        str(workdir / "out"),
        "--ui",
        "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
    ]
    return timed_command(run, workdir, env)


def inference_perf(url: str, workdir: Path) -> float | None:
    command = executable("/tmp/tools-ip", "inference-perf")
    if command is None:
        return None
    lengths = {"min": 0, "max": 0, "mean": 0, "std_dev": 0, "total_count": REQUESTS}
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
            "stages": [{"num_requests": REQUESTS, "concurrency_level": 1}],
        },
        "server": {"type": "vllm", "model_name": MODEL, "base_url": url, "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": str(TOKENIZER)},
        "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
        "storage": {"local_storage": {"path": str(workdir / "out")}},
    }
    # JSON is valid YAML, so no YAML writer is needed here.
    (workdir / "config.yml").write_text(json.dumps(config))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return timed_command([command, "-c", "config.yml"], workdir, env)


TOOLS: dict[str, Callable[[str, Path], float | None]] = {
    "guidellm": guidellm,
    "aiperf": aiperf,
    "inference-perf": inference_perf,
}


def schedule_file(workdir: Path) -> Path:
    requests = [
        {
            "index": index,
            "arrival_s": float(index),
            "input_tokens": INPUT_TOKENS,
            "output_tokens": OUTPUT_TOKENS,
        }
        for index in range(REQUESTS)
    ]
    path = workdir / "requests.json"
    path.write_text(json.dumps(requests))
    return path


def ours_whole_command(url: str, workdir: Path) -> float | None:
    """`stackselect-runner bench` in a fresh interpreter, start-up included like the tools."""
    run = [
        sys.executable,
        "-m",
        "stackselect_runner.cli",
        "bench",
        "--engine-url",
        url,
        "--model",
        MODEL,
        "--requests",
        str(schedule_file(workdir)),
        "--concurrency",
        "1",
        "--warmup",
        "0",
        "--out",
        str(workdir / "results.json"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "runner")}
    return timed_command(run, workdir, env)


def ours_window(url: str) -> float:
    """CPU of this process during the measurement window only."""
    requests = json.loads(schedule_file(Path(tempfile.mkdtemp())).read_text())
    spec = HarnessSpec.from_job_spec({"engine": {"model": MODEL}, "requests": requests}, url)
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = run_load_point(spec, LoadPoint(concurrency=1))
    after = resource.getrusage(resource.RUSAGE_SELF)
    if not all(record.ok for record in result.records):
        sys.exit(f"our harness saw errors: {result.records[0].error}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(live_tools: bool) -> list[Figure]:
    recorded = recorded_cpu_seconds()
    figures = []
    with tempfile.TemporaryDirectory() as workdir:
        root = Path(workdir)
        launch = LaunchSpec(
            model=MODEL,
            port=free_loopback_port(),
            log_path=root / "engine.log",
            options={"seed": 0},
        )
        with SimulatedEngineAdapter().start(launch) as engine:
            engine.wait_ready(timeout_s=30)
            whole = ours_whole_command(launch.base_url, root)
            if whole is None:
                sys.exit("stackselect-runner bench failed; see its output.log")
            figures.append(Figure("ours (whole command)", whole, "live"))
            figures.append(Figure("ours (window only)", ours_window(launch.base_url), "live"))
            for name, run in TOOLS.items():
                folder = root / name
                folder.mkdir()
                cpu = run(launch.base_url, folder) if live_tools and TOKENIZER.exists() else None
                if cpu is None:
                    figures.append(Figure(name, recorded[name], "recorded"))
                else:
                    figures.append(Figure(name, cpu, "live"))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", action="store_true", help="do not run the other tools")
    args = parser.parse_args()
    figures = measure(live_tools=not args.recorded)
    print(f"{REQUESTS} requests, concurrency 1, {INPUT_TOKENS} in / {OUTPUT_TOKENS} out")
    print(f"{'harness':<24}{'CPU s':>8}{'ms/request':>12}  source")
    for figure in figures:
        print(
            f"{figure.name:<24}{figure.cpu_s:>8.2f}{figure.per_request_ms:>12.1f}  {figure.source}"
        )
    ours = figures[0].cpu_s
    tools = figures[2:]
    for figure in tools:
        print(f"ours / {figure.name:<16} {ours / figure.cpu_s:6.1%} (whole command)")
    lightest = min(tools, key=lambda figure: figure.cpu_s)
    print(f"ours is {ours / lightest.cpu_s:.1%} of the lightest tool ({lightest.name})")


if __name__ == "__main__":
    main()
