"""Accuracy of the prediction methods on published measurements the fit never saw.

Run from the repository root: `python bench/bench_accuracy.py [--write-bands]`. It reads
AIConfigurator's measurement sample from the installed `aiconfigurator-core` wheel, keeps the
aggregated (one-pool) rows with a stated concurrency, and splits them by the issue's rule (held out
when sha256("model_path|system|backend") is 0 mod 5). It counts the rows whose own figures imply
more prompt compute than the roofline assumes any engine reaches (they do not add up from a cold
cache; stackselect_domain.prompt_load) and the rows whose engine batch was smaller than their
clients (a queue inside the engine the closed loop does not model). On the other rows outside
that split it chooses the calibration's forms by leave-group-out cross validation and fits its
factors (per engine) over each base method, printing both; on the held-out rows it predicts
TTFT and TPOT with the roofline alone, AIConfigurator's step times alone (both in our closed loop,
clients starting together, 20 rounds each as AIConfigurator's generated benchmark runs),
AIConfigurator's own estimate (its aggregated-serving formula, `aiconfigurator-native`), and the
calibrated result (over AIConfigurator's step times where they answer, else over the roofline),
and prints their median absolute percentage error and the share within 25%, side by side, again
on the rows every method answers, on those of them the loop could reproduce and on each distinct
run once (two diagnostics), then the same error (and its sign) for each held-out group, and the
floor a factor per group could reach (each group scaled by its own median ratio), all measured in
this run.
The catalog comes from fixtures/catalog (no database). `--write-bands` stores each method's
10th-90th percentile relative errors in apps/selections/data/error_bands.json, which estimates show
next to their figures, and the fitted forms and factors in
apps/selections/data/published_factors.json, the record of the fit those bands were measured with.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from django_env import setup_django  # bench/django_env.py, beside this script

setup_django()

from stackselect_domain.steptime import (  # noqa: E402
    METHOD_AICONFIGURATOR,
    METHOD_CALIBRATED,
    METHOD_ROOFLINE,
)

from apps.catalog import aiconfigurator_wheel  # noqa: E402
from apps.catalog.loading import fixture_instances  # noqa: E402
from apps.catalog.models import Accelerator, ModelSpec  # noqa: E402
from apps.catalog.published_sample import (  # noqa: E402
    COPY_CONFLICTING,
    COPY_REPEATED,
    copies_by_run,
    read_sample,
    repeated_runs,
)
from apps.selections.aiconfigurator_provider import METHOD_AICONFIGURATOR_NATIVE  # noqa: E402
from apps.selections.error_bands import BandScope, write_bands  # noqa: E402
from apps.selections.published_calibration import (  # noqa: E402
    Calibration,
    Sample,
    fit_calibration,
    write_calibrations,
)
from apps.selections.published_predict import (  # noqa: E402
    RowContext,
    aiconfigurator_for,
    aiconfigurator_native_for,
    predict_row,
    roofline_for,
)

WITHIN = 0.25
# The table's order; only the app's methods get error bands (the native estimate is a yardstick).
SHOWN = (METHOD_ROOFLINE, METHOD_AICONFIGURATOR, METHOD_AICONFIGURATOR_NATIVE, METHOD_CALIBRATED)
BANDED = (METHOD_ROOFLINE, METHOD_AICONFIGURATOR, METHOD_CALIBRATED)
Pairs = dict[str, list[tuple[float, float]]]


def _contexts(sample_path: Path) -> list[RowContext]:
    models = fixture_instances(ModelSpec, "models")
    accelerators = fixture_instances(Accelerator, "accelerators")
    rows = [r for r in read_sample(sample_path) if r.aggregated and r.concurrency]
    return [RowContext(r, models[r.model_slug], accelerators[r.accelerator_slug]) for r in rows]


def _samples(contexts: list[RowContext]) -> tuple[list[Sample], list[Sample], Counter]:
    roofline, aic, skipped = [], [], Counter()
    for context in contexts:
        try:
            roofline.append(Sample(context, roofline_for(context)))
        except ValueError as error:
            skipped[f"roofline: {str(error).split(':')[0]}"] += 1
        provider = aiconfigurator_for(context)
        if provider is None:
            skipped["aiconfigurator: no answer"] += 1
        else:
            aic.append(Sample(context, provider))
    return roofline, aic, skipped


def _summary(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    errors = [abs(p - m) / m for p, m in pairs]
    return 100 * statistics.median(errors), 100 * sum(e <= WITHIN for e in errors) / len(errors)


def _signed_median(pairs: list[tuple[float, float]]) -> float:
    """Median relative error in %, with its sign: which way a method is wrong on a group."""
    return 100 * statistics.median((p - m) / m for p, m in pairs)


def _common_rows(
    by_row: dict[str, dict[str, tuple[tuple[float, float], tuple[float, float]]]],
    methods: list[str],
    keys: set[str] | None = None,
) -> dict[str, Pairs]:
    """Each method's (predicted, measured) pairs on only the rows every method answered (of
    `keys`, when given), so the methods are compared on the same rows."""
    common: dict[str, Pairs] = {m: {"ttft": [], "tpot": []} for m in methods}
    for key, answers in by_row.items():
        if all(m in answers for m in methods) and (keys is None or key in keys):
            for method in methods:
                common[method]["ttft"].append(answers[method][0])
                common[method]["tpot"].append(answers[method][1])
    return common


def _print_table(results: dict[str, Pairs], of: str) -> None:
    print(
        "| method | held-out rows answered | TTFT MdAPE | TTFT within 25% "
        "| TPOT MdAPE | TPOT within 25% |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for method, entry in results.items():
        ttft, tpot = _summary(entry["ttft"]), _summary(entry["tpot"])
        answered = f"{len(entry['ttft'])} {of}".strip()
        print(
            f"| {method} | {answered} | {ttft[0]:.1f}% "
            f"| {ttft[1]:.0f}% | {tpot[0]:.1f}% | {tpot[1]:.0f}% |"
        )


def _print_common(
    by_row: dict[str, dict[str, tuple[tuple[float, float], tuple[float, float]]]],
    methods: list[str],
    keys: set[str] | None,
    what: str,
) -> None:
    """The table on the rows every method answered (of `keys`, when given)."""
    common = _common_rows(by_row, methods, keys)
    print(f"\non the {len(common[METHOD_ROOFLINE]['ttft'])} {what}:\n")
    _print_table(common, "")


def _one_row_per_run(held: list[RowContext]) -> set[str]:
    """The key of each held-out run's first row (by key): a run the sample exported twice
    counts once."""
    return {copies[0].key for copies in copies_by_run(c.row for c in held).values()}


def _print_left_out(contexts: list[RowContext]) -> None:
    """How many rows each check finds the closed loop cannot reproduce: rows implying more
    prompt compute than the roofline assumes any engine reaches, and rows whose engine batch
    was smaller than their clients. The fit leaves such fitting rows out; the held-out ones stay
    in the goal's figures."""
    checks = (
        ("whose own figures do not add up from a cold cache", lambda c: c.adds_up),
        ("whose engine batch was smaller than their clients", lambda c: c.batch_holds_clients),
    )
    for what, passes in checks:
        odd = Counter(
            (c.row.held_out, f"{c.row.model_path} | {c.row.system} | {c.row.backend}")
            for c in contexts
            if not passes(c)
        )
        for held_out, side in (
            (False, "fitting rows left out of every fit"),
            (True, "held-out rows"),
        ):
            groups = {group: n for (held, group), n in odd.items() if held == held_out}
            print(f"{side} {what}: {sum(groups.values())}")
            for group, count in sorted(groups.items()):
                print(f"  {group}: {count}")


def _print_repeated_runs(contexts: list[RowContext]) -> None:
    """How often the sample repeats a run: the fit counts each fitting run once and leaves out
    runs whose copies disagree on the layout; the held-out rows stay as the issue counts them,
    and a held-out run the fitting rows also hold (under another model's name) is named."""
    fitting = [c.row for c in contexts if c.fits_on]
    reasons = Counter(repeated_runs(fitting).values())
    print(
        f"fitting rows not counted again: {reasons[COPY_REPEATED]} repeat a run another row "
        f"counts, {reasons[COPY_CONFLICTING]} are copies of runs that state different layouts"
    )
    held = [c.row for c in contexts if c.row.held_out]
    fitting_runs = {row.run for row in fitting}
    shared = Counter(
        f"{row.model_path} | {row.system} | {row.backend}"
        for row in {row.run: row for row in held}.values()
        if row.run in fitting_runs
    )
    print(
        f"held-out rows: {len(held)}, {len({row.run for row in held})} distinct runs, "
        f"{sum(shared.values())} of them also among the fitting rows"
    )
    for group, count in sorted(shared.items()):
        print(f"  {group}: {count}")


def _print_groups(by_group: dict[str, dict[str, Pairs]]) -> None:
    """Each held-out group's error per method, so the table's medians can be traced to the
    groups that make them."""
    print("\nby held-out group (MdAPE, signed median error):")
    for group, methods in sorted(by_group.items()):
        print(f"  {group}")
        for method in (m for m in SHOWN if m in methods):
            ttft, tpot = methods[method]["ttft"], methods[method]["tpot"]
            print(
                f"    {method:<21} {len(ttft):>3} rows  TTFT {_summary(ttft)[0]:5.1f}% "
                f"({_signed_median(ttft):+.0f}%)  TPOT {_summary(tpot)[0]:5.1f}% "
                f"({_signed_median(tpot):+.0f}%)"
            )


def _group_factor_floor(by_group: dict[str, dict[str, Pairs]], method: str) -> dict[str, float]:
    """The pooled MdAPE (%) left when each held-out group's predictions are scaled by that
    group's own median measured/predicted ratio: a factor fitted on the held-out rows
    themselves, so not a method. No factor per (model, system, engine), however it is
    learnt, can do better than this on these rows; what is left is the shape within a group
    (against concurrency and lengths) that the method gets wrong."""
    floor = {}
    for metric in ("ttft", "tpot"):
        errors = []
        for methods in by_group.values():
            pairs = methods.get(method, {}).get(metric, [])
            if pairs:
                factor = statistics.median(m / p for p, m in pairs)
                errors.extend(abs(factor * p - m) / m for p, m in pairs)
        floor[metric] = 100 * statistics.median(errors)
    return floor


def _print_floors(by_group: dict[str, dict[str, Pairs]]) -> None:
    print(
        "\nfloor of any per-group factor (each held-out group scaled by its own median ratio, "
        "fitted on the held-out rows: a bound, not a method):"
    )
    for method in (m for m in SHOWN if any(m in methods for methods in by_group.values())):
        floor = _group_factor_floor(by_group, method)
        print(f"  {method:<21} TTFT {floor['ttft']:5.1f}%  TPOT {floor['tpot']:5.1f}%")


def _print_calibration(calibration: Calibration) -> None:
    """The forms cross validation chose on the fitting rows (with every form's score) and the
    factors fitted with them."""
    for metric, scores in calibration.cross_validation.items():
        chosen = {
            "later_rounds": calibration.later_rounds,
            "ttft": calibration.ttft_form,
            "ttft_keys": calibration.ttft_keys,
            "ttft_source": calibration.ttft_source,
            "tpot": calibration.tpot_form,
            "tpot_source": calibration.tpot_source,
        }[metric]
        listed = ", ".join(
            f"{form} {'-' if score is None else f'{score:.1f}%'}" for form, score in scores.items()
        )
        print(f"  {calibration.method} {metric} form {chosen} (cross-validated MdAPE: {listed})")
    for key, factors in sorted(calibration.ttft.items()):
        print(
            f"  {calibration.method} TTFT {'/'.join(key) or 'overall'}: prompt steps "
            f"x{factors.prefill:.2f}, {factors.rounds} rounds, overhead "
            f"{factors.ttft_overhead_ms:.0f} ms at scale 1 + "
            f"{factors.ttft_overhead_per_client_ms:g} ms per client ({factors.rows} rows)"
        )
    for key, log_factor in sorted(calibration.native_ttft.items()):
        print(
            f"  {calibration.method} AIConfigurator's own TTFT {'/'.join(key) or 'overall'}: "
            f"x{math.exp(log_factor):.2f} before the blend"
        )
    for key, tpot in sorted(calibration.tpot.items()):
        print(
            f"  {calibration.method} TPOT {'/'.join(key) or 'overall'}: "
            f"x{math.exp(tpot.log_factor):.2f}, concurrency^{tpot.slope:.3f} ({tpot.rows} rows)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-bands", action="store_true")
    parser.add_argument("--sample", help="a copy of silicon_sample.csv (default: the wheel's)")
    args = parser.parse_args()
    if args.sample:
        sample_path = Path(args.sample)
        sample_source = str(sample_path)
    elif aiconfigurator_wheel.AVAILABLE:
        sample_path = aiconfigurator_wheel.sample_path()
        sample_source = f"{aiconfigurator_wheel.PACKAGE} {aiconfigurator_wheel.installed_version()}"
    else:
        print(f"cannot run: {aiconfigurator_wheel.UNAVAILABLE_REASON}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    contexts = _contexts(sample_path)
    held = [c for c in contexts if c.row.held_out]
    groups = {(c.row.model_path, c.row.system, c.row.backend) for c in held}
    print(f"aggregated rows with a concurrency: {len(contexts)}")
    print(f"held out: {len(held)} rows in {len(groups)} (model, system, engine) groups")
    _print_left_out(contexts)
    _print_repeated_runs(contexts)
    roofline, aic, skipped = _samples(contexts)
    for reason, count in sorted(skipped.items()):
        print(f"  not answered: {reason}: {count}")
    print(f"providers built in {time.perf_counter() - started:.0f} s")
    calibrations = {
        METHOD_ROOFLINE: fit_calibration(METHOD_ROOFLINE, roofline),
        METHOD_AICONFIGURATOR: fit_calibration(METHOD_AICONFIGURATOR, aic),
    }
    print(f"calibrated on the other rows in {time.perf_counter() - started:.0f} s")
    for calibration in calibrations.values():
        _print_calibration(calibration)
    native_started = time.perf_counter()
    native, native_skipped = {}, Counter()
    for context in held:
        estimate = aiconfigurator_native_for(context)
        if estimate.ttft_ms is None:
            native_skipped[": ".join(estimate.reason.split(": ")[:2])[:120]] += 1
        else:
            native[context.row.key] = estimate
    for reason, count in sorted(native_skipped.items()):
        print(f"  not answered: {METHOD_AICONFIGURATOR_NATIVE}: {reason}: {count}")
    print(
        f"{METHOD_AICONFIGURATOR_NATIVE} answered {len(native)} held-out rows in "
        f"{time.perf_counter() - native_started:.1f} s"
    )
    results: dict[str, Pairs] = {}
    by_group: dict[str, dict[str, Pairs]] = {}
    by_row: dict[str, dict[str, tuple[tuple[float, float], tuple[float, float]]]] = {}

    scopes: dict[str, set[tuple[str, str]]] = {}

    def record(method: str, predicted, context) -> None:
        row = context.row
        scopes.setdefault(method, set()).add((row.engine_slug, context.accelerator.vendor))
        group = by_group.setdefault(f"{row.model_path} | {row.system} | {row.backend}", {})
        for entry in (results.setdefault(method, {}), group.setdefault(method, {})):
            entry.setdefault("ttft", []).append((predicted.ttft_ms, row.ttft_ms))
            entry.setdefault("tpot", []).append((predicted.tpot_ms, row.tpot_ms))
        by_row.setdefault(row.key, {})[method] = (
            (predicted.ttft_ms, row.ttft_ms),
            (predicted.tpot_ms, row.tpot_ms),
        )

    roofline_held = {s.context.row.key: s for s in roofline if s.context.row.held_out}
    aic_held = {s.context.row.key: s for s in aic if s.context.row.held_out}
    for context in held:
        row = context.row
        if row.key in native:
            record(METHOD_AICONFIGURATOR_NATIVE, native[row.key], context)
        if row.key not in roofline_held:
            continue
        chosen = roofline_held[row.key]
        base = predict_row(chosen.provider, context)
        record(METHOD_ROOFLINE, base, context)
        if row.key in aic_held:
            chosen = aic_held[row.key]
            base = predict_row(chosen.provider, context)
            record(METHOD_AICONFIGURATOR, base, context)
        record(METHOD_CALIBRATED, calibrations[base.method].predict(chosen, base), context)
    elapsed = time.perf_counter() - started
    print()
    _print_table({m: results[m] for m in SHOWN if m in results}, f"of {len(held)}")
    methods = [m for m in SHOWN if m in results]
    _print_common(by_row, methods, None, "held-out rows every method answers")
    reproducible = {c.row.key for c in held if c.loop_reproduces}
    _print_common(
        by_row,
        methods,
        reproducible,
        "of those the loop could reproduce (their own figures add up from a cold cache and their "
        "engine batch held their clients), a diagnostic, not the goal's figure",
    )
    _print_common(
        by_row,
        methods,
        _one_row_per_run(held),
        "of those rows each distinct run once (the sample exports some held-out runs twice), "
        "a diagnostic, not the goal's figure",
    )
    _print_groups(by_group)
    _print_floors(by_group)
    measured_on = datetime.now(UTC).strftime("%Y-%m-%d")
    print(f"\nmeasured {measured_on} in {elapsed:.0f} s on {os.cpu_count()} cores")
    if args.write_bands:
        relative = {
            method: {metric: [(p - m) / m for p, m in pairs] for metric, pairs in entry.items()}
            for method, entry in results.items()
            if method in BANDED
        }
        write_bands(
            relative,
            measured_on=measured_on,
            source="bench/bench_accuracy.py on the held-out rows of AIConfigurator's "
            f"measurement sample ({sample_source})",
            scopes={method: BandScope.of(scopes[method]) for method in relative},
        )
        write_calibrations(list(calibrations.values()), measured_on=measured_on)
        print("error bands and fitted factors written to apps/selections/data/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
