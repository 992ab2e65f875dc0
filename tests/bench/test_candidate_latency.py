"""bench/bench_candidate_latency.py prints how many rows the measured candidate list held,
counted from its answer, not a figure written into the script."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_rows_printed_are_counted_from_the_candidate_list_answer(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # the script imports its neighbours as a script
    bench = importlib.import_module("bench_candidate_latency")
    answer = {
        "kept_count": 3038,
        "dropped_count": 41,
        "page": 1,
        "page_size": 100,
        "kept": [{"rank": rank} for rank in range(1, 101)],
        "dropped": [{"reasons": []} for _ in range(41)],
        "dropped_groups": [],
    }

    assert bench.page_rows(json.dumps(answer).encode()) == (100, 41)
