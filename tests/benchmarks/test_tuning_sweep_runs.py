"""A tuning sweep on the simulated engine, through the whole chain: each candidate runs at its
engine defaults and at a deliberately tight batch limit, the best setting under the SLO is
kept, and the comparison between the candidates uses each one's best."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.benchmarks.choices import JobState
from apps.evidence.selectors import selection_evidence
from tests.benchmarks.factories import catalog, selection_with_candidates
from tests.benchmarks.sweeps import simulated_sweep, wait_until_every_job_ends

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# One sequence at a time queues every request behind the one decoding: the SLO fails.
TIGHT = 1


@pytest.fixture
def two_layouts(transactional_db, acme, alice):
    rows = catalog()
    return selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16"), ("h100-sxm", 2, "bf16")]
    )


def test_a_sweep_keeps_each_candidates_best_setting_and_compares_the_best(
    client, alice, acme, two_layouts, runners
):
    runner = runners("sim-sweep", gpus=2)
    plan = simulated_sweep(
        user=alice, team=acme, selection=two_layouts, values={"max_num_seqs": [TIGHT]}
    )
    jobs = list(plan.jobs.order_by("pk"))
    assert [(job.tuning["origin"], job.tuning["settings"]) for job in jobs] == [
        ("defaults", {}),
        ("sweep", {"max_num_seqs": TIGHT}),
    ] * 2
    assert jobs[1].engine["options"]["max_num_seqs"] == TIGHT

    wait_until_every_job_ends(plan, runner)
    assert set(plan.jobs.values_list("state", flat=True)) == {JobState.SUCCEEDED}

    evidence = selection_evidence(team=acme, selection_id=two_layouts.pk)
    assert len(evidence.candidates) == 2  # four runs, two candidates: each at its best
    for entry in evidence.candidates:
        kept = [trial for trial in entry.trials if trial.kept]
        tried = {trial.origin: trial for trial in entry.trials}
        assert len(entry.trials) == 2 and len(kept) == 1
        assert kept[0].key == entry.key and kept[0].settings == {}
        assert tried["sweep"].max_rate.rate_rps is None or (
            tried["sweep"].max_rate.rate_rps < tried["defaults"].max_rate.rate_rps
        )
        assert entry.identity["engine_config"]["tuning"]["origin"] == "defaults"
        # The simulated engine answered the probe: shown as simulated, never judged.
        assert entry.judgement.mode == "simulated" and entry.judgement.flag is None
    reference, other = evidence.candidates
    assert other.status == "comparable" and other.candidate_id != reference.candidate_id
    assert {item.key: item.status for item in evidence.checklist}["tuned_settings"] == "met"

    client.force_login(alice)
    page = client.get(reverse("evidence:selection", args=[two_layouts.pk])).content.decode()
    assert page.count('data-kept="true"') == 2 and page.count('data-kept="false"') == 2
    assert "max_num_seqs=1" in page
