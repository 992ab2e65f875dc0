"""Candidate generation over the curated catalog: hard filters, reasons, ranking, storage."""

from __future__ import annotations

import math

import pytest

from apps.audit.models import AuditEvent
from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import Capability, ModelSpec
from apps.selections import services
from apps.selections.candidates import evaluate
from apps.selections.candidates.enumeration import layouts
from apps.selections.candidates.goal import goal_from_documents
from apps.selections.catalog_adapter import CatalogSnapshot
from apps.selections.choices import CandidateOutcome, SelectionState
from apps.selections.efficiency_fit import TeamFit
from apps.selections.estimator import Efficiency, ModelArch
from tests.selections.conftest import GOAL
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


def _compute(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    return services.candidates_compute(actor_user=user, selection=selection)


def _codes(selection, **stack):
    """Reason codes of the dropped candidates whose stack has these values."""
    rows = selection.candidates.filter(outcome=CandidateOutcome.DROPPED)
    for key, value in stack.items():
        rows = rows.filter(**{f"stack__{key}": value})
    return {reason["code"] for row in rows for reason in row.reasons}


def _kept(selection, **stack):
    rows = selection.candidates.filter(outcome=CandidateOutcome.KEPT)
    for key, value in stack.items():
        rows = rows.filter(**{f"stack__{key}": value})
    return list(rows)


def test_it_drops_a_stack_that_does_not_fit_in_memory(catalog, alice, acme, goal_payload):
    goal_payload["workload"]["model"] = "llama-3.1-70b"
    goal_payload["constraints"].update(accelerators=["l4"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    # 70.55e9 weights x 2 bytes = 141 GB against 24 GB x 0.9 on one L4.
    assert "memory_insufficient" in _codes(selection, engine="vllm", accelerator="l4")
    assert _kept(selection) == []


def test_it_keeps_the_same_model_where_it_fits(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    kept = _kept(selection, engine="vllm", accelerator="h100-sxm")
    assert kept and all(c.estimate["memory"]["weights_gb_per_gpu"] < 80 for c in kept)
    assert selection.state == SelectionState.CANDIDATES_READY


def test_it_drops_tensorrt_llm_on_amd_hardware_as_unsupported(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["mi300x"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    assert "hardware_unsupported" in _codes(selection, engine="tensorrt-llm")
    assert _kept(selection, engine="vllm", accelerator="mi300x")


def test_it_drops_engines_whose_required_feature_is_below_the_minimum_maturity(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(
        accelerators=["h100-sxm"],
        max_gpus=1,
        required_features=[{"feature": "pd_disaggregation", "min_maturity": "stable"}],
    )

    selection = _compute(alice, acme, goal_payload)

    # The catalog has P/D disaggregation as experimental in vLLM, stable in SGLang.
    assert "feature_immature" in _codes(selection, engine="vllm")
    assert _kept(selection, engine="sglang")
    assert not _kept(selection, engine="vllm")


def test_orchestrators_and_kv_runtimes_are_dropped_as_not_serving_engines(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    assert _codes(selection, engine="dynamo") == {"not_a_serving_engine"}
    assert _codes(selection, engine="lmcache") == {"not_a_serving_engine"}
    dropped = selection.candidates.filter(outcome=CandidateOutcome.DROPPED, stack__engine="dynamo")
    message = dropped.first().reasons[0]["message"]
    assert " is an orchestrator, not a serving engine" in message


def test_each_verdict_records_the_capability_cells_it_read(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    candidate = _kept(selection, engine="vllm")[0]
    keys = set(
        Capability.objects.filter(pk__in=candidate.capability_ids).values_list(
            "feature__key", flat=True
        )
    )
    assert {"hw_nvidia", "arch_llama", "prec_bf16", "openai_api"} <= keys


def test_kept_candidates_are_ranked_by_score_with_the_leaders_simulated(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "l4"], max_gpus=2)

    selection = _compute(alice, acme, goal_payload)

    kept = _kept(selection)
    assert [c.rank for c in kept] == list(range(1, len(kept) + 1))
    scores = [c.score for c in kept]
    simulated = [c for c in kept if c.estimate["comparison"] == "simulated"]
    assert simulated and kept[: len(simulated)] == simulated  # the simulated comparison first
    assert scores[: len(simulated)] == sorted(scores[: len(simulated)], reverse=True)
    analytic = kept[len(simulated) :]
    for candidate, nature in [(c, "simulated") for c in simulated] + [
        (c, "analytic") for c in analytic
    ]:
        estimate = candidate.estimate
        assert estimate["label"] == f"{estimate['method']}, {nature}"
        # The note says why: AIConfigurator's version, or why the roofline answered instead.
        assert estimate["method_note"].startswith("roofline") == (estimate["method"] == "roofline")
    methods = {c.estimate["method"] for c in kept}
    if aiconfigurator_wheel.AVAILABLE:  # it times vLLM and SGLang; llama.cpp and TGI are roofline
        assert methods == {"aiconfigurator", "roofline"}
    assert [c.score for c in analytic] == sorted((c.score for c in analytic), reverse=True)
    assert any("curve" in c.estimate for c in simulated)
    # An H100 streams weights 11x faster than an L4, so it leads per GPU.
    assert kept[0].stack["accelerator"] == "h100-sxm"


def test_prices_rank_by_requests_per_dollar(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(
        accelerators=["h100-sxm"], max_gpus=1, prices={"h100-sxm": 2.0}
    )

    selection = _compute(alice, acme, goal_payload)

    leader = _kept(selection)[0]
    expected = leader.estimate["goodput_per_gpu_rps"] * 3600 / 2.0
    assert leader.estimate["ranked_by"] == "requests_per_dollar"
    assert leader.estimate["requests_per_dollar"] == pytest.approx(expected, rel=1e-3)


def test_a_moe_model_gets_expert_parallel_stacks_and_a_hint(catalog, alice, acme, goal_payload):
    goal_payload["workload"].update(model="mixtral-8x7b")
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=2)

    selection = _compute(alice, acme, goal_payload)

    expert_parallel = [c for c in _kept(selection, engine="vllm") if c.stack["ep"] == 2]
    assert expert_parallel
    assert "expert_parallel" in {hint["code"] for hint in expert_parallel[0].hints}


def test_a_maintenance_mode_engine_carries_a_project_status_hint(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    tgi = _kept(selection, engine="tgi")
    assert tgi and all("project_status" in {h["code"] for h in c.hints} for c in tgi)


def test_computing_candidates_writes_one_audit_event_with_the_counts(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    event = AuditEvent.objects.get(action="selection.candidates_compute")
    assert event.object_id == str(selection.pk)
    assert event.after["kept"] == len(_kept(selection))
    assert event.after["dropped"] == selection.candidates.filter(outcome="dropped").count()


DENSE = ModelArch(8.0, 8.0, 32, 4096, 32, 8, 128)
MOE = ModelArch(46.7, 12.9, 32, 4096, 32, 8, 128, experts_total=8, experts_active=2)


def test_layouts_are_powers_of_two_up_to_max_gpus_and_only_moe_gets_expert_parallelism():
    dense = layouts(DENSE, 4)
    moe = layouts(MOE, 4)

    assert {layout.gpus for layout in dense} == {1, 2, 4}
    assert all(layout.ep == 1 for layout in dense)
    assert {(lay.tp, lay.dp, lay.ep) for lay in moe if lay.ep > 1} == {
        (2, 1, 2),
        (1, 2, 2),
        (4, 1, 4),
        (2, 2, 4),
        (1, 4, 4),
    }


def test_layouts_skip_tensor_parallel_degrees_that_do_not_split_the_kv_heads():
    odd_heads = ModelArch(7.0, 7.0, 28, 3584, 28, 4, 128)

    assert {layout.tp for layout in layouts(odd_heads, 8)} == {1, 2, 4}


def test_kept_stacks_say_how_many_gpus_the_peak_rate_needs(catalog, alice, acme, goal_payload):
    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 40, "peak_factor": 2}
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    leader = _kept(selection)[0]
    per_gpu = leader.estimate["goodput_per_gpu_rps"]
    assert leader.estimate["gpus_for_peak"] == math.ceil(80 / per_gpu)


def test_a_closed_loop_goal_is_sized_by_the_clients_a_replica_serves_within_the_slo(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["workload"]["arrival"] = {"concurrency": 400}
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=2)

    selection = _compute(alice, acme, goal_payload)

    rows = _kept(selection)

    def replicas_for_400(row):
        return row.estimate["gpus_for_clients"] / (row.stack["tp"] * row.stack["pp"])

    leader = rows[0]
    assert leader.estimate["comparison"] == "simulated" and "gpus_for_peak" not in leader.estimate
    # Little's law at the simulated max rate: its requests in flight are the clients it serves
    clients = leader.estimate["replica_clients_in_slo"]
    assert clients > 0
    assert replicas_for_400(leader) == math.ceil(400 / clients)
    analytic = next(row for row in rows if row.estimate["comparison"] == "analytic")
    clients = analytic.estimate["replica_clients_in_slo"]
    assert clients == analytic.estimate["latency"]["concurrency"]
    assert replicas_for_400(analytic) == math.ceil(400 / clients)
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    gpus, per_replica = (
        leader.estimate["gpus_for_clients"],
        leader.estimate["replica_clients_in_slo"],
    )
    assert f"{gpus} GPUs for the goal's clients, {per_replica} per replica within the SLO" in page


def test_a_shared_prefix_an_engine_caches_raises_its_analytic_figures_and_the_batch_it_holds(
    catalog, alice, acme, goal_payload
):
    goal_payload["workload"].update(isl={"kind": "fixed", "value": 4096}, max_context=8192)
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    cold = _kept(_compute(alice, acme, goal_payload), engine="vllm", tp=1)[0].estimate
    goal_payload["workload"].update(prefix_share=0.9, prefix_tokens=3584)
    warm = _kept(_compute(alice, acme, goal_payload), engine="vllm", tp=1)[0].estimate

    assert warm["analytic_goodput_per_gpu_rps"] > 1.5 * cold["analytic_goodput_per_gpu_rps"]
    assert warm["latency"]["prefill_ms"] < cold["latency"]["prefill_ms"] / 3
    # each request holds its own blocks and reads the prefix's, held once: more fit
    assert warm["latency"]["concurrency"] > cold["memory"]["max_concurrent_sequences"]


def test_an_expert_group_over_data_parallel_ranks_is_sized_in_whole_groups(
    catalog, alice, acme, goal_payload
):
    goal_payload["workload"].update(model="deepseek-v3", precision="fp8")
    goal_payload["workload"]["arrival"] = {"process": "poisson", "rate_rps": 2}
    goal_payload["constraints"].update(accelerators=["h200-sxm"], max_gpus=8)

    selection = _compute(alice, acme, goal_payload)

    spread = [row for row in _kept(selection) if row.stack["ep"] > row.stack["tp"]]
    assert spread, "no kept layout splits its experts over data-parallel ranks"
    for row in spread:
        stack, gpus = row.stack, row.estimate["gpus_for_peak"]
        # its dp ranks share the experts, so none deploys alone: whole groups of ep GPUs
        assert gpus % (math.lcm(stack["tp"], stack["ep"]) * stack["pp"]) == 0, (stack, gpus)
        assert gpus >= stack["ep"]


def test_a_two_stage_pipeline_is_not_ranked_as_if_one_stage_waited_on_the_other(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=2)
    selection = _compute(alice, acme, goal_payload)

    one = _kept(selection, engine="vllm", tp=1, pp=1, dp=1)
    two = _kept(selection, engine="vllm", tp=1, pp=2)
    assert one and two
    one_gpu = one[0].estimate["analytic_goodput_per_gpu_rps"]
    two_stages = two[0].estimate["analytic_goodput_per_gpu_rps"]
    # Two micro-batches in flight keep both GPUs busy: per GPU about what one GPU does, where
    # one batch passing through both stages would leave each GPU idle half the time (about 0.5).
    assert 0.8 < two_stages / one_gpu < 1.6
    assert two[0].estimate["latency"]["concurrency"] % 2 == 0  # both micro-batches counted


def test_a_stack_timed_with_the_teams_own_factors_claims_no_band_the_plain_roofline_measured(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(
        actor_user=alice,
        selection=selection,
        team_fits={("h100-sxm", "vllm"): TeamFit(Efficiency())},
    )

    fitted = _kept(selection, engine="vllm")
    other = _kept(selection, engine="sglang")
    assert fitted and other
    for candidate in fitted:
        bands = candidate.estimate["error_band"]
        assert {band["band"] for band in bands.values()} == {None}
        assert "team's own runs" in bands["ttft_ms"]["reason"]
        assert candidate.estimate["method"] == "roofline-team-fitted"
        assert candidate.estimate["latency"]["method"] == "roofline-team-fitted"
    assert other[0].estimate["error_band"]["ttft_ms"]["band"] is not None
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert "factors fitted on the team's own measured runs where a row names" in page


def test_the_ranking_rule_claims_team_fitted_factors_only_where_a_row_was_timed_with_them(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = _compute(alice, acme, goal_payload)

    assert not any(row.estimate["method"] == "roofline-team-fitted" for row in _kept(selection))
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert 'id="ranking-rule"' in page
    rule = page.split('id="ranking-rule">', 1)[1].split("</p>", 1)[0]
    assert "AIConfigurator's measured kernels where it covers" in rule
    assert "team's own" not in rule


def test_every_accelerator_that_can_meet_the_slo_gets_a_simulated_leader(catalog):
    # the analytic order puts one GPU's replicas first; the other GPU's best replica is still
    # simulated, so the team sees both in the comparison with queueing. L4 meets the SLO with
    # none of its stacks (score 0), so simulating it would tell nothing.
    model = ModelSpec.objects.get(slug="llama-3.1-8b")
    workload = {**GOAL["workload"], "precision": ["bf16"]}
    goal = goal_from_documents(
        model=model, workload=workload, slo=GOAL["slo"], constraints={"max_gpus": 1}
    )
    snapshot = CatalogSnapshot.load(accelerator_slugs=["h100-sxm", "l4", "mi300x"])

    kept = evaluate(snapshot, goal, simulate_top=1).kept

    simulated = [v for v in kept if v.estimate["comparison"] == "simulated"]
    assert {v.stack.accelerator.slug for v in simulated} == {"h100-sxm", "mi300x"}
    assert all(v.score == 0 for v in kept if v.stack.accelerator.slug == "l4")
    # one replica for the leader and one for the other accelerator
    replicas = {(v.stack.release.pk, v.stack.accelerator.pk, v.stack.layout.tp) for v in simulated}
    assert len(replicas) == 2
