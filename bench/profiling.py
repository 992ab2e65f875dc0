"""Where an in-process request's time goes: cProfile's own time per function, summed by layer.

Shared by the benchmarks that print, after their measured figures, the profile of what is left
(bench_candidate_latency.py for the pages, bench_ingest.py for one result upload). cProfile
slows Python code more than C code and waiting, so the shares matter, not the milliseconds.

A layer is named by the first (name, fragment) pair whose fragment occurs in the function's
"file:function" label; C functions have no file ("~"), so their fragments match their names
(for example "select.epoll" for psycopg waiting on the server's answer).
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parent.parent
Layers = Sequence[tuple[str, str]]


def layer_of(label: str, layers: Layers) -> str:
    return next((name for name, fragment in layers if fragment in label), "the rest")


def _label(filename: str, function: str) -> str:
    return f"{filename}:{function}"


def _where(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function
    short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
    return f"{short}:{line} {function}"


def profile_rounds(call: Callable[[int], object], rounds: int) -> tuple[cProfile.Profile, float]:
    """Run `call(round)` `rounds` times under cProfile; the profile and the wall ms per round."""
    profiler = cProfile.Profile()
    start = perf_counter()
    for number in range(rounds):
        profiler.enable()
        call(number)
        profiler.disable()
    return profiler, (perf_counter() - start) / rounds * 1e3


def profile_lines(
    name: str,
    profiler: cProfile.Profile,
    wall_ms: float,
    rounds: int,
    layers: Layers,
    *,
    top: int = 5,
    unit: str = "request",
) -> list[str]:
    """Own time by layer (shares of the profiled total) and the `top` costliest functions."""
    own = pstats.Stats(profiler).stats  # {(file, line, function): (cc, nc, own s, cum s, ...)}
    by_layer: dict[str, float] = {}
    for (filename, _, function), (_, _, own_s, _, _) in own.items():
        layer = layer_of(_label(filename, function), layers)
        by_layer[layer] = by_layer.get(layer, 0.0) + own_s
    total = sum(by_layer.values()) or 1.0
    shares = ", ".join(
        f"{layer} {seconds / total:.0%}"
        for layer, seconds in sorted(by_layer.items(), key=lambda item: -item[1])
    )
    lines = [f"profile {name}: {wall_ms:.1f} ms/{unit} in-process under cProfile; {shares}"]
    for (filename, line, function), (_, calls, own_s, _, _) in sorted(
        own.items(), key=lambda item: -item[1][2]
    )[:top]:
        per_round_ms = own_s / rounds * 1e3
        lines.append(
            f"  {per_round_ms:7.2f} ms {calls // rounds:>7} calls  "
            f"{_where(filename, line, function)}"
        )
    return lines
