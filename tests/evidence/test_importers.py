"""Importers on the real outputs of guidellm, AIPerf and inference-perf (data/README.md says
how they were made), and on a vLLM file written to the format in vLLM's source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apps.evidence.analysis import summarize, tpot_seconds
from apps.evidence.importers import (
    import_aiperf,
    import_guidellm,
    import_inference_perf,
    import_vllm,
    read_json_lines,
)
from apps.evidence.schema import LoadPoint, UploadError

DATA = Path(__file__).parent / "data"
REQUESTS = 24


def load(relative: str) -> Any:
    return json.loads((DATA / relative).read_text())


@pytest.fixture(scope="module")
def guidellm_report() -> dict[str, Any]:
    return load("guidellm/benchmarks.json")


@pytest.fixture(scope="module")
def aiperf_files() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records = read_json_lines((DATA / "aiperf/profile_export.jsonl").read_text())
    return load("aiperf/profile_export_aiperf.json"), records


@pytest.fixture(scope="module")
def inference_perf_files() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return (
        load("inference_perf/summary_lifecycle_metrics.json"),
        load("inference_perf/per_request_lifecycle_metrics.json"),
    )


def import_ip(files, **options):
    summary, per_request = files
    return import_inference_perf(
        summary, per_request, load_point=LoadPoint(concurrency=1), tool_version="0.7.0", **options
    )


# ---------------------------------------------------------------------------- guidellm


def test_guidellm_maps_every_request_of_the_concurrency_one_benchmark(guidellm_report):
    run = import_guidellm(guidellm_report)

    (point,) = run.load_points
    assert point.load_point == LoadPoint(concurrency=1)
    assert len(point.records) == REQUESTS
    assert point.duration_s == guidellm_report["benchmarks"][0]["duration"]
    assert run.identity == {
        "harness_tool": "guidellm",
        "harness_version": guidellm_report["metadata"]["guidellm_version"],
        "model": "sim-model",
    }
    assert (run.requested_isl, run.requested_osl) == (64, 16)


def test_guidellm_ttft_is_converted_to_seconds_and_agrees_with_its_own_mean(guidellm_report):
    run = import_guidellm(guidellm_report)
    own = guidellm_report["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]

    summary = summarize(run.load_points[0])

    assert summary.ttft_s is not None
    assert summary.ttft_s.mean == pytest.approx(own["mean"] / 1000)


def test_guidellm_tpot_is_recomputed_without_the_first_token(guidellm_report):
    run = import_guidellm(guidellm_report)
    requests = guidellm_report["benchmarks"][0]["requests"]["successful"]
    by_start = sorted(requests, key=lambda r: r["request_start_time"])

    ours = tpot_seconds(run.load_points[0].records).to_numpy()

    expected = [
        (r["request_latency"] - r["time_to_first_token_ms"] / 1000) / (r["output_tokens"] - 1)
        for r in by_start
    ]
    assert ours == pytest.approx(expected)
    # guidellm's own TPOT spreads the first token's wait over all tokens, so it differs.
    assert not np.allclose(ours, [r["time_per_output_token_ms"] / 1000 for r in by_start])
    assert any("first token" in note for note in run.notes)


def test_guidellm_records_no_token_gaps_so_itl_is_missing(guidellm_report):
    summary = summarize(import_guidellm(guidellm_report).load_points[0])

    assert summary.itl_s is None
    assert summary.tpot_s is not None


def test_guidellm_achieved_prompt_length_is_flagged_against_the_requested_one(guidellm_report):
    run = import_guidellm(guidellm_report)
    successful = guidellm_report["benchmarks"][0]["requests"]["successful"]
    prompts = [r["prompt_tokens"] for r in successful]

    summary = summarize(
        run.load_points[0], requested_isl=run.requested_isl, requested_osl=run.requested_osl
    )

    # The simulated engine's usage counts fewer prompt tokens than guidellm asked for.
    assert summary.achieved_isl == pytest.approx(np.mean(prompts))
    assert np.mean(prompts) < 0.95 * 64
    assert summary.isl_off_target is True
    assert summary.osl_off_target is False


def test_a_guidellm_file_without_benchmarks_is_refused_by_name():
    with pytest.raises(ValueError, match="guidellm report: missing 'benchmarks'"):
        import_guidellm({"metadata": {}})


# ------------------------------------------------------------------------------ AIPerf


def test_aiperf_maps_the_profiling_records_with_tool_and_version(aiperf_files):
    summary, records = aiperf_files

    run = import_aiperf(summary, records)

    (point,) = run.load_points
    assert point.load_point == LoadPoint(concurrency=1)
    assert len(point.records) == REQUESTS
    assert run.identity["harness_tool"] == "aiperf"
    assert run.identity["harness_version"] == summary["aiperf_version"]
    assert (run.requested_isl, run.requested_osl) == (64.0, 16.0)


def test_aiperf_latency_percentiles_match_its_own_summary_in_seconds(aiperf_files):
    summary, records = aiperf_files

    ours = summarize(import_aiperf(summary, records).load_points[0])

    for name, mine in (("time_to_first_token", ours.ttft_s), ("request_latency", ours.e2e_s)):
        assert mine is not None
        assert mine.p50 == pytest.approx(summary[name]["p50"] / 1000)
        assert mine.p99 == pytest.approx(summary[name]["p99"] / 1000)


def test_aiperf_inter_chunk_latency_becomes_our_itl(aiperf_files):
    summary, records = aiperf_files

    ours = summarize(import_aiperf(summary, records).load_points[0])

    assert ours.itl_s is not None
    assert ours.itl_s.mean == pytest.approx(summary["inter_chunk_latency"]["avg"] / 1000)
    assert ours.itl_s.p90 == pytest.approx(summary["inter_chunk_latency"]["p90"] / 1000)


def test_aiperf_tpot_uses_the_server_token_count_not_its_client_count(aiperf_files):
    summary, records = aiperf_files
    first = records[0]["metrics"]
    completion = first["usage_completion_tokens"]["value"]

    frame = import_aiperf(summary, records).load_points[0].records

    decode_s = (first["request_latency"]["value"] - first["time_to_first_token"]["value"]) / 1000
    assert frame.loc[0, "output_tokens"] == completion
    assert tpot_seconds(frame)[0] == pytest.approx(decode_s / (completion - 1))
    assert completion != first["output_sequence_length"]["value"]


def test_aiperf_warmup_records_are_left_out(aiperf_files):
    summary, records = aiperf_files
    warmup = json.loads(json.dumps(records[0]))
    warmup["metadata"]["benchmark_phase"] = "warmup"

    run = import_aiperf(summary, [warmup, *records])

    assert len(run.load_points[0].records) == REQUESTS


def test_an_aiperf_failed_record_becomes_an_error_and_a_timeout_is_recognised(aiperf_files):
    summary, records = aiperf_files
    broken = json.loads(json.dumps(records[:2]))
    broken[0]["error"] = {"code": 500, "type": "HTTPError", "message": "boom"}
    broken[1]["error"] = {"code": None, "type": "TimeoutError", "message": "read timed out"}

    result = summarize(import_aiperf(summary, broken).load_points[0])

    assert (result.errors, result.timeouts, result.completed) == (2, 1, 0)
    assert result.ttft_s is None


def test_an_aiperf_rate_phase_becomes_a_rate_load_point(aiperf_files):
    summary, records = aiperf_files
    config = json.loads(json.dumps(summary["input_config"]))
    config["phases"] = [{"name": "profiling", "kind": "profiling", "type": "poisson", "rate": 4.0}]

    run = import_aiperf({**summary, "input_config": config}, records)

    assert run.load_points[0].load_point == LoadPoint(rate_rps=4.0)


# ---------------------------------------------------------------------- inference-perf


def test_inference_perf_maps_every_request_with_the_given_stage_and_version(
    inference_perf_files,
):
    run = import_ip(inference_perf_files, requested_isl=64, requested_osl=16)

    (point,) = run.load_points
    assert point.load_point == LoadPoint(concurrency=1)
    assert len(point.records) == REQUESTS
    assert point.duration_s == inference_perf_files[0]["benchmark_time_seconds"]
    assert run.identity == {"harness_tool": "inference-perf", "harness_version": "0.7.0"}


def test_inference_perf_latencies_match_its_own_summary(inference_perf_files):
    own = inference_perf_files[0]["successes"]["latency"]

    ours = summarize(import_ip(inference_perf_files).load_points[0])

    assert ours.ttft_s is not None and ours.e2e_s is not None
    assert ours.ttft_s.p50 == pytest.approx(own["time_to_first_token"]["median"])
    assert ours.ttft_s.p90 == pytest.approx(own["time_to_first_token"]["p90"])
    assert ours.e2e_s.p99 == pytest.approx(own["request_latency"]["p99"])


def test_inference_perf_itl_comes_from_chunk_times_not_client_tokens(inference_perf_files):
    own = inference_perf_files[0]["successes"]["latency"]["inter_token_latency"]
    first = inference_perf_files[1][0]["info"]["response_metrics"]

    ours = summarize(import_ip(inference_perf_files).load_points[0])

    assert ours.itl_s is not None
    # Its ITL has zero gaps where client tokens share a chunk; ours has no zero gap.
    assert own["min"] == 0.0
    assert ours.itl_s.p50 > own["p25"]
    frame = import_ip(inference_perf_files).load_points[0].records
    assert frame.loc[0, "itl_s"] == pytest.approx(np.diff(first["chunk_times"]).tolist())


def _without_server_usage(per_request, *, short: int) -> list[dict[str, Any]]:
    """The real per-request file as a server that reports no usage leaves it: no server_usage,
    and for request `short` a client re-tokenised count two below its streamed chunks."""
    requests = json.loads(json.dumps(per_request))
    for request in requests:
        del request["info"]["response_metrics"]["server_usage"]
    response = requests[short]["info"]["response_metrics"]
    response["output_tokens"] = len(response["chunk_times"]) - 2
    return requests


def test_inference_perf_without_server_usage_imports_and_says_what_it_corrected(
    inference_perf_files,
):
    summary, per_request = inference_perf_files
    requests = _without_server_usage(per_request, short=15)
    chunks = len(requests[15]["info"]["response_metrics"]["chunk_times"])

    run = import_ip((summary, requests))

    frame = run.load_points[0].records
    assert len(frame) == REQUESTS
    assert frame.loc[15, "output_tokens"] == chunks  # raised to the chunk count
    client = requests[0]["info"]["response_metrics"]["output_tokens"]
    assert frame.loc[0, "output_tokens"] == client  # the client's count where it fits
    assert f"{REQUESTS} of {REQUESTS} request(s) had no server usage" in " ".join(run.notes)
    assert "1 of those counted fewer output tokens than streamed chunks" in " ".join(run.notes)


def test_inference_perf_still_refuses_a_server_count_below_the_chunks(inference_perf_files):
    summary, per_request = inference_perf_files
    requests = json.loads(json.dumps(per_request))
    response = requests[3]["info"]["response_metrics"]
    response["server_usage"]["completion_tokens"] = len(response["chunk_times"]) - 2

    with pytest.raises(ValueError, match="output_tokens: is less than len"):
        import_ip((summary, requests))


def test_inference_perf_with_server_usage_adds_no_correction_note(inference_perf_files):
    notes = " ".join(import_ip(inference_perf_files).notes)
    assert "no server usage" not in notes and "raised" not in notes


def test_inference_perf_without_per_request_timings_is_refused():
    with pytest.raises(ValueError, match="inference-perf request: missing 'end_time'"):
        import_inference_perf(
            {"benchmark_time_seconds": 1.0},
            [{"start_time": 1.0}],
            load_point=LoadPoint(concurrency=1),
        )


# ------------------------------------------------------------------------------- vLLM


@pytest.fixture(scope="module")
def vllm_result() -> dict[str, Any]:
    return load("vllm/vllm-bench-serve-format.json")


def test_vllm_maps_the_detailed_lists_to_records_in_send_order(vllm_result):
    run = import_vllm(vllm_result, tool_version="0.11.0")

    frame = run.load_points[0].records
    assert run.load_points[0].load_point == LoadPoint(rate_rps=2.0)
    assert frame["send_s"].tolist() == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0])
    assert frame["error"].notna().tolist() == [False, False, True, False, False]
    assert run.identity == {
        "harness_tool": "vllm bench serve",
        "harness_version": "0.11.0",
        "model": "sim-model",
        "tokenizer": "/tmp/evtok/tokenizer",
    }


def test_vllm_figures_match_hand_computation_and_vllms_own_summary(vllm_result):
    # Completed TTFTs 0.10, 0.20, 0.15, 0.12 -> P50 0.135, mean 0.1425.
    # TPOTs (0.16-0.10)/3 = 0.02, (0.26-0.20)/2 = 0.03, (0.30-0.15)/3 = 0.05; the one-token
    # request has none -> P50 0.03. ITL pools 7 gaps (3 x 0.02, 2 x 0.03, 2 x 0.05): P50 0.03.
    summary = summarize(import_vllm(vllm_result).load_points[0])

    assert summary.ttft_s is not None and summary.tpot_s is not None
    assert summary.itl_s is not None and summary.e2e_s is not None
    assert summary.ttft_s.p50 == pytest.approx(0.135)
    assert summary.ttft_s.mean == pytest.approx(0.1425)
    assert summary.tpot_s.p50 == pytest.approx(0.03)
    assert summary.tpot_s.mean == pytest.approx(0.1 / 3)
    assert summary.itl_s.mean == pytest.approx(0.22 / 7)
    assert summary.itl_s.p50 == pytest.approx(0.03)
    assert (summary.completed, summary.errors) == (4, 1)
    assert summary.request_throughput_rps == pytest.approx(vllm_result["request_throughput"])
    for name, mine in (("ttft", summary.ttft_s), ("tpot", summary.tpot_s), ("itl", summary.itl_s)):
        assert mine.p99 * 1000 == pytest.approx(vllm_result[f"p99_{name}_ms"])


def test_vllm_infinite_rate_with_a_concurrency_cap_is_a_concurrency_load_point(vllm_result):
    closed = {**vllm_result, "request_rate": "inf", "max_concurrency": 4}

    assert import_vllm(closed).load_points[0].load_point == LoadPoint(concurrency=4)


def test_a_vllm_file_saved_without_detail_is_refused_with_the_flag_to_use(vllm_result):
    summary_only = {key: value for key, value in vllm_result.items() if key != "itls"}

    with pytest.raises(ValueError, match="--save-detailed"):
        import_vllm(summary_only)


def test_a_vllm_file_whose_counts_contradict_its_timings_is_refused(vllm_result):
    contradictory = {**vllm_result, "output_lens": [1, 3, 0, 4, 1]}

    with pytest.raises(UploadError, match=r"records\[0\]\.output_tokens"):
        import_vllm(contradictory)
