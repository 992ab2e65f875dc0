"""One SLO verdict everywhere: the same requests judged by the server's evidence analysis, the
runner's rate search and the simulator's summary agree, and each honours the percentile."""

from __future__ import annotations

import pytest
from stackselect_domain.ratesearch import RateSearch, SearchSpec
from stackselect_domain.slo import SLO
from stackselect_runner.harness import RequestRecord, records_verdict

from apps.evidence.analysis import max_rate_from_summaries, summarize
from apps.selections.simulator import FINISHED, REJECTED, RequestOutcome
from apps.selections.simulator import summarize_outcomes as simulator_summary
from tests.evidence.samples import failed, samples, streamed

# Ten requests: six fast, three with a 0.9 s TTFT, one failed. 60% meet every target.
FAST, SLOW = 0.1, 0.9
ROWS = [
    *[streamed(i, ttft_s=FAST, gaps=[0.02, 0.02]) for i in range(6)],
    *[streamed(i, ttft_s=SLOW, gaps=[0.02, 0.02]) for i in range(6, 9)],
    failed(9),
]
# The records are sent half a second apart, so the load point lasts five seconds.
DURATION_S = 5.0
# Attainment 0.5 alone would pass; a p90 within 200 ms fails (only 60% are within it).
LOOSE = SLO(ttft_ms=200, tpot_ms=50, attainment=0.5, percentile=50)
STRICT = SLO(ttft_ms=200, tpot_ms=50, attainment=0.5, percentile=90)


def runner_records() -> list[RequestRecord]:
    fields = set(RequestRecord.__slots__)
    return [RequestRecord(**{k: v for k, v in row.items() if k in fields}) for row in ROWS]


def search_passes(slo: SLO) -> bool:
    search = RateSearch(
        SearchSpec(slo=slo, start_rate_rps=2, min_rate_rps=1, max_rate_rps=4, requests_per_probe=10)
    )
    return search.record(2.0, records_verdict(runner_records(), slo)).passed


def simulator_outcomes() -> list[RequestOutcome]:
    outcomes = []
    for row in ROWS:
        done = row["error"] is None
        e2e = row["e2e_s"]
        outcomes.append(
            RequestOutcome(
                index=row["index"],
                status=FINISHED if done else REJECTED,
                input_tokens=row["input_tokens"],
                output_tokens=max(row["output_tokens"], 1),
                arrival_s=row["send_s"],
                first_token_s=row["send_s"] + row["ttft_s"] if done else None,
                finish_s=row["send_s"] + e2e if done else None,
                ttft_ms=row["ttft_s"] * 1000 if done else None,
                tpot_ms=(e2e - row["ttft_s"]) / (row["output_tokens"] - 1) * 1000 if done else None,
                e2e_ms=e2e * 1000 if done else None,
                preemptions=0,
            )
        )
    return outcomes


@pytest.mark.parametrize(("slo", "holds"), [(LOOSE, True), (STRICT, False)])
def test_the_server_the_runner_and_the_simulator_give_one_verdict(slo: SLO, holds: bool) -> None:
    server = summarize(samples(ROWS, duration_s=DURATION_S), slo=slo)
    simulated = simulator_summary(
        simulator_outcomes(), slo=slo, prefix_hit_tokens=0, steps=1, batch_tokens=1
    )

    assert server.slo_attainment == pytest.approx(0.6)
    assert records_verdict(runner_records(), slo).attainment == pytest.approx(0.6)
    assert simulated.attainment == pytest.approx(0.6)
    assert (server.slo_margin >= 0) is holds
    assert search_passes(slo) is holds
    assert simulated.slo_met is holds


def test_the_percentile_moves_the_measured_max_rate() -> None:
    """A sweep passing at 1 req/s and judged at 2 req/s: the strict SLO fails there."""
    fast = samples(
        [streamed(i, ttft_s=FAST, gaps=[0.02]) for i in range(10)],
        load_point={"rate_rps": 1.0},
        duration_s=DURATION_S,
    )
    at_two = samples(ROWS, load_point={"rate_rps": 2.0}, duration_s=DURATION_S)
    loose = max_rate_from_summaries([summarize(fast, slo=LOOSE), summarize(at_two, slo=LOOSE)])
    strict = max_rate_from_summaries([summarize(fast, slo=STRICT), summarize(at_two, slo=STRICT)])
    assert loose.bound == "at_least"
    assert strict.bound == "interpolated" and strict.rate_rps < 2.0
