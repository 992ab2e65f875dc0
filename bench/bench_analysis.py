"""Analysis speed: `summarize()` over synthetic requests against bare numpy, same percentiles.

Both sides compute TTFT, TPOT, ITL and E2E at P50/P90/P95/P99 plus the mean over completed
requests. Bare numpy starts from ready float arrays (the ITL gaps already flat); `summarize`
starts from the typed DataFrame an upload becomes, so the ratio is what the DataFrame and the
other figures (throughput, tokens/s, attainment) cost on top. Best of `--repeats` runs.

    .venv/bin/python bench/bench_analysis.py --requests 1000000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from time import perf_counter

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stackselect_domain.slo import SLO

from apps.evidence.analysis import PERCENTILES, summarize
from apps.evidence.schema import LoadPoint, LoadPointSamples

ERROR_SHARE = 0.01


def synthetic_samples(requests: int, gaps: int, seed: int) -> LoadPointSamples:
    """A frame shaped like a validated upload: 1% failures, lognormal latencies."""
    rng = np.random.default_rng(seed)
    ttft = rng.lognormal(np.log(0.2), 0.5, requests)
    flat = rng.lognormal(np.log(0.02), 0.3, requests * gaps)
    lists = [chunk.tolist() for chunk in flat.reshape(requests, gaps)]
    error = np.where(rng.random(requests) < ERROR_SHARE, "timeout", None)
    frame = pd.DataFrame(
        {
            "index": np.arange(requests, dtype=np.int64),
            "send_s": np.sort(rng.random(requests)) * requests / 1000,
            "ttft_s": ttft,
            "e2e_s": ttft + flat.reshape(requests, gaps).sum(axis=1),
            "input_tokens": np.full(requests, 512, dtype=np.int64),
            "output_tokens": np.full(requests, gaps + 1, dtype=np.int64),
            "status": pd.array(np.full(requests, 200), dtype="Int64"),
            "itl_s": lists,
            "itl_count": np.full(requests, gaps, dtype=np.int64),
            "error": pd.array(error, dtype="string"),
            "finish_reason": pd.array([None] * requests, dtype="string"),
        }
    )
    return LoadPointSamples(LoadPoint(rate_rps=1000.0), requests / 1000, frame, flat)


def bare_numpy(ttft: np.ndarray, e2e: np.ndarray, tokens: np.ndarray, gaps: np.ndarray) -> dict:
    tpot = (e2e - ttft) / (tokens - 1)
    return {
        name: (np.percentile(values, PERCENTILES), values.mean())
        for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", gaps), ("e2e", e2e))
    }


def best_seconds(run, repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = perf_counter()
        run()
        timings.append(perf_counter() - start)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--gaps-per-request", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    samples = synthetic_samples(args.requests, args.gaps_per_request, args.seed)
    records = samples.records
    ok = records["error"].isna().to_numpy()
    ttft, e2e = records["ttft_s"].to_numpy()[ok], records["e2e_s"].to_numpy()[ok]
    tokens = records["output_tokens"].to_numpy()[ok]
    gaps = np.concatenate([np.asarray(g) for g in records["itl_s"].to_numpy()[ok]])
    slo = SLO(ttft_ms=300, tpot_ms=25)

    summary = summarize(samples, gpu_count=8, slo=slo, requested_isl=512)
    reference = bare_numpy(ttft, e2e, tokens, gaps)
    assert summary.itl_s is not None and summary.ttft_s is not None
    assert np.isclose(summary.itl_s.p99, reference["itl"][0][-1])
    assert np.isclose(summary.ttft_s.p50, reference["ttft"][0][0])

    ours = best_seconds(
        lambda: summarize(samples, gpu_count=8, slo=slo, requested_isl=512), args.repeats
    )
    numpy_only = best_seconds(lambda: bare_numpy(ttft, e2e, tokens, gaps), args.repeats)
    print(f"requests: {args.requests:,}  itl gaps: {gaps.size:,}")
    print(f"summarize():  {ours:.3f} s")
    print(f"bare numpy:   {numpy_only:.3f} s")
    print(f"ratio:        {ours / numpy_only:.2f}x")


if __name__ == "__main__":
    main()
