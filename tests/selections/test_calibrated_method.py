"""The calibrated method in the app: a stack the stored factors cover is estimated with them,
named so and with the calibrated method's held-out band; any other falls back to its base
provider and says why; and the factors the app reads come from fitting rows only."""

from __future__ import annotations

import json
import math

import pytest

from apps.catalog.models import Accelerator, ModelSpec
from apps.selections import services
from apps.selections.calibrated_method import calibrated_choice, calibrated_latency
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.choices import CandidateOutcome
from apps.selections.error_bands import error_band
from apps.selections.estimator import Parallelism, estimate_latency
from apps.selections.published_calibration import (
    FACTORS_FILE,
    CalibratedStepTime,
    fit_calibration,
    stored_calibrations,
    write_calibrations,
)
from apps.selections.steptime_providers import StackInputs, step_time_factory
from tests.selections.helpers import create_selection
from tests.selections.test_published_calibration import HELD, _perturbed, _samples

pytestmark = pytest.mark.django_db
URL = "/api/v1/estimate/"
H100_VLLM = {
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "accelerator": "h100-sxm",
    "gpu_count": 1,
    "tp": 1,
    "isl": 1024,
    "osl": 256,
    "engine": "vllm",
}


def _post(client, payload):
    return client.post(URL, payload, content_type="application/json")


def _stack(engine: str = "vllm", accelerator: str = "h100-sxm") -> StackInputs:
    row = Accelerator.objects.get(slug=accelerator)
    spec = ModelSpec.objects.get(slug="llama-3.1-8b")
    return StackInputs(
        model=model_arch(spec),
        accel=accelerator_spec(row),
        precision="bf16",
        kv_dtype="bf16",
        parallelism=Parallelism(tp=1),
        engine=engine,
        catalog_model=spec,
        accelerator_slug=accelerator,
        accelerator_family=row.family,
    )


def _stored_factors(method: str, engine: str) -> dict:
    """A base method's factors for an engine as the bench wrote them, read here from the file."""
    data = json.loads(FACTORS_FILE.read_text(encoding="utf-8"))["methods"][method]
    return {"ttft": data["ttft"][engine], "tpot": data["tpot"][engine]}


def test_a_covered_stack_is_estimated_by_the_calibrated_method_with_its_band(catalog, alice_client):
    body = _post(alice_client, H100_VLLM).json()

    assert (body["method"], body["nature"]) == ("calibrated", "analytic")
    # the base is the provider the stack gets without calibration (AIConfigurator where installed)
    stack = _stack()
    factory = step_time_factory(stack)
    base_method = factory(1, 1024 + 128).method
    base_name = {"roofline": "roofline", "aiconfigurator": "AIConfigurator"}[base_method]
    factors = _stored_factors(base_method, "vllm")
    rows = factors["ttft"]["rows"]
    name = f"calibrated ({base_name} x factors fitted on {rows} published vllm rows)"
    assert body["method_label"] == f"{name}, analytic"
    assert body["method_note"].startswith(name) and "held-out split" in body["method_note"]
    assert "not applied" in body["method_note"]  # the fitted rounds, and it says so
    for metric in ("ttft", "tpot"):  # the calibrated method's own held-out band
        band, stored = body["error_band"][f"{metric}_ms"], error_band("calibrated", metric)
        assert band["band"] == {"p10": stored.low, "p90": stored.high}
        assert band["rows"] == stored.rows
    # The uncalibrated provider's figures, and the bench's correction of them by hand
    shared = {**stack.replica(), "isl": 1024, "osl": 256, "concurrency": 1}
    plain = estimate_latency(**shared, step_time=factory)
    prefill = factors["ttft"]["prefill"]
    scaled = estimate_latency(
        **shared, step_time=lambda b, c: CalibratedStepTime(factory(b, c), prefill)
    )
    tpot_scale = math.exp(factors["tpot"]["log_factor"])  # concurrency 1: no slope
    assert body["ttft_ms"] == pytest.approx(scaled.ttft_ms + factors["ttft"]["ttft_overhead_ms"])
    assert body["tpot_ms"] == pytest.approx(plain.tpot_ms * tpot_scale)
    assert body["ttft_ms"] != pytest.approx(plain.ttft_ms, rel=0.05)
    if base_method == "roofline":  # AIConfigurator's fit kept its TPOT uncorrected
        assert body["tpot_ms"] != pytest.approx(plain.tpot_ms, rel=0.05)
    assert (
        body["analytic"]["method_label"] == body["max_concurrency_method"] == body["method_label"]
    )


def test_the_roofline_of_a_stack_aiconfigurator_does_not_cover_is_calibrated_too(catalog):
    """Over the roofline the TPOT correction applies (x1.5-2 at one sequence)."""
    stack = _stack()
    factory = step_time_factory(stack, measured_kernels=False)  # the roofline
    choice = calibrated_choice(stack, "roofline")
    shared = {**stack.replica(), "isl": 1024, "osl": 256, "concurrency": 1}
    plain = estimate_latency(**shared, step_time=factory)
    calibrated, correction = calibrated_latency(
        stack, choice, isl=1024, osl=256, concurrency=1, step_time=factory
    )
    factors = _stored_factors("roofline", "vllm")

    assert correction.tpot_scale == pytest.approx(math.exp(factors["tpot"]["log_factor"]))
    assert calibrated.tpot_ms == pytest.approx(plain.tpot_ms * correction.tpot_scale)
    assert calibrated.tpot_ms != pytest.approx(plain.tpot_ms, rel=0.05)
    assert calibrated.ttft_ms != pytest.approx(plain.ttft_ms, rel=0.05)


def test_a_covered_simulated_estimate_corrects_both_runs_and_names_the_method(
    catalog, alice_client
):
    body = _post(alice_client, {**H100_VLLM, "concurrency": 4}).json()

    assert (body["method"], body["nature"]) == ("calibrated", "simulated")
    assert body["method_label"].startswith("calibrated (")
    assert body["method_label"].endswith("x factors fitted on 100 published vllm rows), simulated")
    assert body["stationary"] is True, body["stationarity"]
    percentiles = body["percentiles"]
    assert body["ttft_ms"] == pytest.approx(percentiles["ttft_ms"]["mean"])
    assert body["tpot_ms"] == pytest.approx(percentiles["tpot_ms"]["mean"])
    assert percentiles["e2e_ms"] is None  # two runs: no per-request E2E to rank
    assert body["e2e_ms"] == pytest.approx(body["ttft_ms"] + 255 * body["tpot_ms"])
    assert body["error_band"]["ttft_ms"]["rows"] == error_band("calibrated", "ttft").rows


@pytest.mark.parametrize(
    ("change", "named"),
    [({"accelerator": "mi300x", "model": "llama-3.1-70b", "tp": 8, "gpu_count": 8}, "mi300x")],
)
def test_a_stack_the_published_rows_do_not_measure_falls_back_and_says_so(
    catalog, alice_client, change, named
):
    body = _post(alice_client, {**H100_VLLM, **change}).json()

    assert (body["method"], body["nature"]) == ("roofline", "analytic")
    assert body["method_note"].startswith("roofline")
    assert "not calibrated, because" in body["method_note"] and named in body["method_note"]
    assert body["error_band"]["ttft_ms"]["rows"] == error_band("roofline", "ttft").rows


def test_an_engine_the_published_rows_do_not_measure_falls_back_and_says_so(catalog, alice_client):
    body = _post(alice_client, {**H100_VLLM, "engine": "lmdeploy"}).json()

    assert (body["method"], body["method_label"]) == ("roofline", "roofline, analytic")
    assert "not calibrated, because" in body["method_note"] and "lmdeploy" in body["method_note"]


def test_the_factors_the_app_reads_are_unchanged_by_a_held_out_row(catalog, tmp_path):
    """The bench fits and stores; the app reads the store. Perturbing a held-out row leaves
    the stored file, and so the app's correction, byte for byte the same."""
    samples = _samples()
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    write_calibrations([fit_calibration("roofline", samples)], measured_on="2026-12-03", path=first)
    write_calibrations(
        [fit_calibration("roofline", _perturbed(samples, HELD))],
        measured_on="2026-12-03",
        path=second,
    )
    assert first.read_bytes() == second.read_bytes()
    stored = stored_calibrations(first)
    assert stored.methods["roofline"] == fit_calibration("roofline", samples)  # read back whole
    choice = calibrated_choice(_stack(), "roofline", stored=stored)
    again = calibrated_choice(_stack(), "roofline", stored=stored_calibrations(second))
    assert choice.applies and again.applies
    stack = _stack()
    assert choice.correction(stack, isl=1024, concurrency=8) == again.correction(
        stack, isl=1024, concurrency=8
    )


def test_team_factors_win_over_the_published_calibration(catalog):
    choice = calibrated_choice(_stack(), "roofline", team_factors=True)

    assert not choice.applies and "team's own" in choice.reason


def test_the_candidate_page_ranks_covered_stacks_by_the_calibrated_method(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    kept = list(selection.candidates.filter(outcome=CandidateOutcome.KEPT))
    published = ("vllm", "sglang", "tensorrt-llm")  # the engines the published rows measure

    covered = [c for c in kept if c.stack["accelerator"] == "h100-sxm"]
    covered = [c for c in covered if c.stack["engine"] in published]
    uncovered = [c for c in kept if c.stack["accelerator"] == "mi300x"]
    assert covered and uncovered
    for candidate in covered:  # the analytic figures every kept stack has
        latency = candidate.estimate["latency"]
        assert latency["method"] == "calibrated", latency["method_note"]
        assert latency["label"].startswith("calibrated (roofline x factors fitted on")
    for candidate in uncovered:
        latency = candidate.estimate["latency"]
        assert latency["method"] == "roofline"
        assert "not calibrated, because" in latency["method_note"]
    for candidate in (c for c in covered if c.estimate["comparison"] == "analytic"):
        estimate = candidate.estimate
        assert estimate["method"] == "calibrated"
        assert estimate["error_band"]["ttft_ms"]["rows"] == error_band("calibrated", "ttft").rows
    for candidate in (c for c in covered if c.estimate["comparison"] == "simulated"):
        # the simulated search keeps its provider and says why
        assert "not calibrated: the fitted factors" in candidate.estimate["method_note"]
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    band = error_band("calibrated", "ttft")
    assert "calibrated (roofline x factors fitted on" in page
    assert f"TTFT {band.low * 100:+.0f}% to {band.high * 100:+.0f}%" in page
