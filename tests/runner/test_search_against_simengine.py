"""A search attempt end to end on the runner: fake runner API, real simulated engine subprocess.

Must show (issue 6): against the simulated engine whose highest passing rate is known (see
test_search_scenario.py for how it is known), the search lands within 5% of it and measures
fewer load points than a 10-point sweep would.
"""

from __future__ import annotations

from pathlib import Path

from stackselect_runner.harness import RequestRecord, records_verdict
from stackselect_runner.jobrun import Outcome

from .fake_api import FakeRunnerServer
from .test_runner_job_runs import ATTEMPT, fake_api, job_runner, job_spec
from .test_search_scenario import (
    SLO,
    TIME_SCALE,
    reference_max_rate,
    schedule,
    search_section,
)

__all__ = ["fake_api"]  # the fixture, imported so pytest finds it here
SWEEP_POINTS = 10


def uploaded_probes(server: FakeRunnerServer) -> list[tuple[int, float, float]]:
    """(index, rate, attainment) of each uploaded probe, recomputed from its records."""
    probes = []
    for upload in server.uploads.values():
        records = [RequestRecord(**item) for item in upload["records"]]
        measured = records_verdict(records, SLO).attainment
        assert measured is not None
        point = upload["load_point"]
        probes.append((point["index"], point["rate_rps"], measured))
    return sorted(probes)


def test_the_search_lands_within_5_percent_of_the_true_rate_in_fewer_probes_than_a_sweep(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    spec = job_spec(1, [{"rate_rps": 1.0}], time_scale=TIME_SCALE)
    spec["requests"] = schedule()
    spec["search"] = search_section()
    fake_api.job_spec = spec

    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.SUCCEEDED

    probes = uploaded_probes(fake_api)
    assert [index for index, _, _ in probes] == list(range(len(probes)))
    assert len(probes) < SWEEP_POINTS
    failing = [rate for _, rate, share in probes if share < SLO.attainment]
    answer = max(
        rate for _, rate, share in probes if share >= SLO.attainment and rate < min(failing)
    )
    reference = reference_max_rate()
    assert abs(answer - reference) <= 0.05 * reference
    reason = fake_api.calls[-1].body["reason"]
    assert reason.startswith(f"highest rate meeting the SLO: {answer:.4g} req/s")
