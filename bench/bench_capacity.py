"""How far the app's capacity is from published maximum-load throughput.

Run from the repository root: `python bench/bench_capacity.py`. For every cell of the TensorRT-LLM
performance overview the catalog can represent (apps/catalog/data/trtllm_perf_overview.csv:
output tokens/s per GPU under `trtllm-bench throughput`), it predicts the same figure with the
run the overview made (its stated request count, all queued at once, with the batch settings
trtllm-bench derives; apps/selections/trtllm_bench.py) simulated on the roofline's and on
AIConfigurator's step times (apps/selections/published_capacity.py names every setting it
assumes), and prints, measured in this run, each method's median absolute percentage error,
signed median and share within 25%: over every cell it answers, per model, per GPU, per
ISL/OSL and per model on each GPU.
No factor is fitted on these cells, so every one of them is held out.
The catalog comes from fixtures/catalog (no database); AIConfigurator needs its wheel.
`--write-bands` stores each method's 10th-90th percentile relative errors over every cell it
answered as its capacity band in apps/selections/data/error_bands.json, which the candidate
list shows next to each simulated capacity.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime

from django_env import setup_django  # bench/django_env.py, beside this script

setup_django()

from stackselect_domain.steptime import METHOD_AICONFIGURATOR, METHOD_ROOFLINE  # noqa: E402

from apps.catalog import aiconfigurator_wheel  # noqa: E402
from apps.catalog.loading import fixture_instances  # noqa: E402
from apps.catalog.models import Accelerator, ModelSpec  # noqa: E402
from apps.catalog.published_overview import SOURCE_NAME, read_overview  # noqa: E402
from apps.selections.error_bands import CAPACITY, BandScope, write_bands  # noqa: E402
from apps.selections.published_capacity import (  # noqa: E402
    ENGINE,
    CapacityCell,
    CapacityPrediction,
    predict_capacity,
)

WITHIN = 0.25
METHODS = (METHOD_ROOFLINE, METHOD_AICONFIGURATOR)


def _cells() -> tuple[list[CapacityCell], int]:
    models = fixture_instances(ModelSpec, "models")
    accelerators = fixture_instances(Accelerator, "accelerators")
    rows = read_overview()
    kept = [row for row in rows if row.representable]
    cells = [CapacityCell(r, models[r.model_slug], accelerators[r.accelerator_slug]) for r in kept]
    return cells, len(rows)


def _line(label: str, errors: list[float], total: int) -> str:
    if not errors:
        return f"  {label:<42} answered 0 of {total}"
    mdape = statistics.median(abs(error) for error in errors)
    signed = statistics.median(errors)
    within = sum(abs(error) <= WITHIN for error in errors) / len(errors)
    return (
        f"  {label:<42} answered {len(errors):>3} of {total:<3}  MdAPE {mdape:6.1%}  "
        f"signed median {signed:+7.1%}  within 25% {within:4.0%}"
    )


def _model(cell: CapacityCell) -> str:
    return cell.model.slug


def _gpu(cell: CapacityCell) -> str:
    return f"on {cell.accelerator.slug}"


def _lengths(cell: CapacityCell) -> str:
    return f"ISL/OSL {cell.row.isl}/{cell.row.osl}"


def _model_on_gpu(cell: CapacityCell) -> str:
    return f"{cell.model.slug} {_gpu(cell)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-bands", action="store_true", help="store the capacity bands")
    args = parser.parse_args()
    started = time.perf_counter()
    cells, listed = _cells()
    methods = [
        method
        for method in METHODS
        if method != METHOD_AICONFIGURATOR or aiconfigurator_wheel.AVAILABLE
    ]
    answers: dict[str, list[tuple[CapacityCell, CapacityPrediction]]] = defaultdict(list)
    seconds: dict[str, float] = {}
    for method in methods:
        began = time.perf_counter()
        answers[method] = [(cell, predict_capacity(cell, method)) for cell in cells]
        seconds[method] = time.perf_counter() - began
    print(f"capacity at maximum load against {SOURCE_NAME}")
    print(
        f"  {len(cells)} of its {listed} cells representable; measured "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; output tokens/s per GPU, relative error "
        "(predicted - published) / published"
    )
    if not aiconfigurator_wheel.AVAILABLE:
        print(f"  aiconfigurator: not measured ({aiconfigurator_wheel.UNAVAILABLE_REASON})")
    answered_errors: dict[str, list[float]] = {}
    scopes: dict[str, BandScope] = {}
    for method in methods:
        pairs = answers[method]
        errors = [p.relative_error(c.row.output_tokens_s_per_gpu) for c, p in pairs]
        answered = answered_errors[method] = [e for e in errors if e is not None]
        scopes[method] = BandScope.of(
            (ENGINE, c.accelerator.vendor) for c, p in pairs if p.per_gpu_tokens_s is not None
        )
        print(f"{method} ({seconds[method]:.0f} s)")
        print(_line("every cell", answered, len(cells)))
        for (cell, prediction), error in zip(pairs, errors, strict=True):
            if error is None and prediction.reason:
                print(f"  not answered: {cell.row.key}: {prediction.reason}")
        # Per model, per GPU, per lengths (the stated run is shorter for long sequences) and per
        # model on each GPU: a GPU the method reads badly (a new family, say) shows on its own
        # instead of hiding in a model's median.
        for group in (_model, _gpu, _lengths, _model_on_gpu):
            grouped: dict[str, list[float]] = defaultdict(list)
            for (cell, _), error in zip(pairs, errors, strict=True):
                if error is not None:
                    grouped[group(cell)].append(error)
            for label in sorted(grouped):
                print(_line(label, grouped[label], sum(group(c) == label for c in cells)))
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.write_bands:
        measured_on = datetime.now(UTC).strftime("%Y-%m-%d")
        write_bands(
            {method: {CAPACITY: errors} for method, errors in answered_errors.items()},
            measured_on=measured_on,
            source="bench/bench_capacity.py on the TensorRT-LLM performance overview's "
            "maximum-load cells (output tokens/s per GPU), each simulated as the overview "
            "ran it",
            scopes=scopes,
        )
        print(f"capacity bands written for {', '.join(methods)} ({measured_on})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
