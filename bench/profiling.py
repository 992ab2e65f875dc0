"""Where an in-process request's time goes: cProfile's own time per function, summed by layer.

Shared by the benchmarks that print, after their measured figures, the profile of what is left
(bench_candidate_latency.py for the pages, bench_ingest.py for one result upload). cProfile
slows Python code more than C code and waiting, so the shares matter, not the milliseconds.

A layer is named by the first (name, fragment) pair whose fragment occurs in the function's
"file:function" label. A function no fragment names (a C function such as bytes.split or
numpy's, or library code the layers leave out) counts for its callers' layers, its own time
split by the time it spent under each caller, so msgspec's decode called by the upload's
parser is counted as decoding, not as "the rest"; what no named caller reaches is the rest.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parent.parent
Layers = Sequence[tuple[str, str]]


Func = tuple[str, int, str]
REST = "the rest"


def layer_of(label: str, layers: Layers) -> str | None:
    return next((name for name, fragment in layers if fragment in label), None)


def _label(func: Func) -> str:
    return f"{func[0]}:{func[2]}"


def _where(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function
    short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
    return f"{short}:{line} {function}"


class _Attribution:
    """Each function's layer shares: its own layer's, or its callers' weighted by the time
    (cumulative, in each caller) it spent there; a cycle or no caller ends in the rest."""

    def __init__(self, stats: dict, layers: Layers) -> None:
        self.stats, self.layers = stats, layers
        self.memo: dict[Func, dict[str, float]] = {}

    def of_caller(self, func: Func) -> dict[str, float]:
        if func in self.memo:
            return self.memo[func]
        named = layer_of(_label(func), self.layers)
        if named is not None:
            shares = {named: 1.0}
        else:
            self.memo[func] = {REST: 1.0}  # a cycle back here counts as the rest
            shares = self.split(self.stats.get(func, (0, 0, 0, 0, {}))[4], index=3)
        self.memo[func] = shares
        return shares

    def split(self, callers: dict, *, index: int) -> dict[str, float]:
        """Shares over `callers` ({caller: (cc, nc, own s, cum s)}) weighted by entry `index`."""
        total = sum(entry[index] for entry in callers.values())
        if not callers or total <= 0:
            return {REST: 1.0}
        shares: dict[str, float] = {}
        for caller, entry in callers.items():
            for layer, share in self.of_caller(caller).items():
                shares[layer] = shares.get(layer, 0.0) + share * entry[index] / total
        return shares

    def of_own_time(self, func: Func) -> dict[str, float]:
        named = layer_of(_label(func), self.layers)
        if named is not None:
            return {named: 1.0}
        return self.split(self.stats[func][4], index=2)  # own time under each caller


def profile_rounds(call: Callable[[int], object], rounds: int) -> tuple[cProfile.Profile, float]:
    """Run `call(round)` `rounds` times under cProfile; the profile and the wall ms per round."""
    profiler = cProfile.Profile()
    start = perf_counter()
    for number in range(rounds):
        profiler.enable()
        call(number)
        profiler.disable()
    return profiler, (perf_counter() - start) / rounds * 1e3


def _second(item: tuple[str, float]) -> float:
    return item[1]


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
    own = pstats.Stats(profiler).stats  # {func: (cc, nc, own s, cum s, {caller: ...})}
    attribution = _Attribution(own, layers)
    by_layer: dict[str, float] = {}
    for func, (_, _, own_s, _, _) in own.items():
        for layer, share in attribution.of_own_time(func).items():
            by_layer[layer] = by_layer.get(layer, 0.0) + own_s * share
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
        layer = max(attribution.of_own_time((filename, line, function)).items(), key=_second)
        lines.append(
            f"  {per_round_ms:7.2f} ms {calls // rounds:>7} calls  "
            f"{_where(filename, line, function)}  [{layer[0]}]"
        )
    return lines
