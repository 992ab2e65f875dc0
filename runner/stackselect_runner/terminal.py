"""What a person watching the runner's terminal sees: a live line and a summary per load point."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from stackselect_runner.harness import LoadPointResult

MS = 1000.0


def _ms(stats: dict[str, float | None], key: str) -> str:
    value = stats[key]
    return "n/a" if value is None else f"{value * MS:.1f}"


def summary_line(result: LoadPointResult) -> str:
    summary = result.summary()
    throughput = summary["request_throughput_rps"]
    rate = "n/a" if throughput is None else f"{throughput:.2f}"
    parts = [
        f"{result.point.label()}: {summary['completed']}/{summary['requests']} ok",
        f"{rate} req/s",
    ]
    for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("E2E", "e2e_s")):
        stats = summary[key]
        parts.append(f"{name} p50 {_ms(stats, 'p50')} / p99 {_ms(stats, 'p99')} ms")
    return ", ".join(parts)


def progress_printer(label: str, stream: TextIO) -> Callable[[int, int], None]:
    """Rewrites one terminal line; silent when the stream is not a terminal."""
    interactive = stream.isatty()

    def show(done: int, total: int) -> None:
        if interactive:
            stream.write(f"\r{label}: {done}/{total} requests")
            stream.flush()

    return show


def end_progress_line(stream: TextIO) -> None:
    if stream.isatty():
        stream.write("\n")
