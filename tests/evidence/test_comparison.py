"""Candidates x load points from stored runs: repeats, intervals, verdicts, comparability."""

from __future__ import annotations

from stackselect_domain.identity import canonical_identity, fingerprint

from apps.evidence.analysis import summarize
from apps.evidence.comparison import StoredResult, StoredRun, build_evidence
from tests.evidence.samples import failed, samples, streamed

BASE = {"model": "llama", "engine": "vllm", "accelerator": "h100-sxm", "gpu_count": 1}


def run(run_id: int, ttft_s: float, **identity) -> StoredRun:
    full = canonical_identity({**BASE, **identity})
    measured = samples([streamed(i, ttft_s=ttft_s, gaps=[0.01, 0.01]) for i in range(4)])
    result = StoredResult({"rate_rps": 2.0}, summarize(measured, gpu_count=1))
    return StoredRun(
        run_id, f"run {run_id}", None, "runner", "harness", full, fingerprint(full), 1, [result]
    )


def cell(entry, name="ttft_p50_ms"):
    return entry.points[0].cells[name]


def test_repeats_under_one_identity_give_an_interval_around_their_mean():
    entries = build_evidence([run(1, 0.10), run(2, 0.12), run(3, 0.14)])

    (entry,) = entries
    assert entry.run_ids == [1, 2, 3]
    assert cell(entry).value == 120.0  # mean of 100, 120 and 140 ms
    assert 100 <= cell(entry).interval.low < 120 < cell(entry).interval.high <= 140


def test_a_candidate_is_better_only_when_the_intervals_do_not_overlap():
    apart = [
        run(1, 0.10),
        run(2, 0.11),
        run(3, 0.30, engine="sglang"),
        run(4, 0.31, engine="sglang"),
    ]
    reference, other = build_evidence(apart)
    assert reference.label == "run 1" and other.status == "comparable"
    assert cell(other).verdict == "worse"  # higher TTFT, intervals apart

    overlapping = [
        run(1, 0.10),
        run(2, 0.30),
        run(3, 0.12, engine="sglang"),
        run(4, 0.28, engine="sglang"),
    ]
    _, other = build_evidence(overlapping)
    assert cell(other).verdict == "indistinguishable"


def test_a_single_run_gets_no_verdict_but_missing():
    _, other = build_evidence([run(1, 0.10), run(2, 0.30, engine="sglang")])

    assert cell(other).interval is None and cell(other).verdict == "missing"


def test_a_different_workload_is_not_comparable_and_gets_no_verdict():
    _, other = build_evidence(
        [run(1, 0.1), run(2, 0.1), run(3, 0.3, model="qwen", engine="sglang")],
    )

    assert (other.status, other.differing) == ("not_comparable", ("model",))
    assert cell(other).verdict is None


def test_the_reference_can_be_chosen_by_its_identity_key():
    runs = [run(1, 0.1), run(2, 0.1), run(3, 0.3, engine="sglang")]
    chosen = runs[2].fingerprint

    reference, _ = build_evidence(runs, reference_key=chosen)

    assert reference.key == chosen and reference.status == "reference"


def _with_failures(failures: int, **identity) -> StoredRun:
    full = canonical_identity({**BASE, **identity})
    records = [streamed(i, ttft_s=0.1, gaps=[0.01]) for i in range(10 - failures)]
    records += [failed(10 - failures + i) for i in range(failures)]
    measured = samples(records, duration_s=5.0)  # ten requests, one every 0.5 s
    result = StoredResult({"rate_rps": 2.0}, summarize(measured, gpu_count=1))
    return StoredRun(1, "run 1", None, "runner", "harness", full, fingerprint(full), 1, [result])


def test_a_load_point_is_over_the_error_budget_only_above_the_plans_max_error_rate():
    policy = {"failure_policy": {"max_error_rate": 0.1}}

    (at_budget,) = build_evidence([_with_failures(1, **policy)])
    (over,) = build_evidence([_with_failures(2, **policy)])
    (unjudged,) = build_evidence([_with_failures(2)])  # imported: no failure policy

    assert (at_budget.points[0].error_share, at_budget.points[0].over_error_budget) == (0.1, False)
    assert (over.points[0].error_share, over.points[0].over_error_budget) == (0.2, True)
    assert (unjudged.points[0].error_share, unjudged.points[0].over_error_budget) == (0.2, None)
