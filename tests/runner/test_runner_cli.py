"""`stackselect-runner bench` against the simulated engine subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stackselect_runner.cli import main
from stackselect_runner.engines import EngineProcess

from .conftest import MODEL


def write_requests(path: Path, count: int) -> Path:
    requests = [
        {"index": i, "arrival_s": i * 0.5, "input_tokens": 30, "output_tokens": 4}
        for i in range(count)
    ]
    path.write_text(json.dumps(requests))
    return path


def test_bench_measures_each_load_point_prints_a_summary_and_writes_results(
    engine_process: EngineProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    main(
        [
            "bench",
            "--engine-url", engine_process.launch_spec.base_url,
            "--model", MODEL,
            "--requests", str(write_requests(tmp_path / "requests.json", 4)),
            "--concurrency", "1", "4",
            "--warmup", "1",
            "--out", str(out),
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert "concurrency 1: 4/4 ok" in printed
    assert "concurrency 4: 4/4 ok" in printed
    assert "TTFT p50" in printed
    report = json.loads(out.read_text())
    assert [point["point"] for point in report["load_points"]] == [
        {"index": 0, "concurrency": 1},
        {"index": 1, "concurrency": 4},
    ]
    first = report["load_points"][0]
    assert [record["output_tokens"] for record in first["records"]] == [4, 4, 4, 4]
    assert first["summary"]["ttft_s"]["p50"] > 0


def test_bench_rejects_a_missing_requests_file_with_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "bench",
                "--engine-url", "http://127.0.0.1:1",
                "--model", "m",
                "--requests", str(tmp_path / "missing.json"),
                "--rate", "1",
                "--out", str(tmp_path / "out.json"),
            ]
        )  # fmt: skip
    assert exit_info.value.code == 2


def test_bench_runs_the_load_points_of_a_whole_job_spec_file(
    engine_process: EngineProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = json.loads(write_requests(tmp_path / "requests.json", 3).read_text())
    job_spec = {
        "engine": {"adapter": "simulated", "model": "ignored-by-bench"},
        "harness": {"endpoint": "chat", "timeout_s": 30},
        "requests": requests,
        "load_points": [{"index": 0, "rate_rps": 50.0}],
    }
    spec_file = tmp_path / "job.json"
    spec_file.write_text(json.dumps(job_spec))
    out = tmp_path / "results.json"
    main(
        [
            "bench",
            "--engine-url", engine_process.launch_spec.base_url,
            "--model", MODEL,
            "--requests", str(spec_file),
            "--out", str(out),
        ]
    )  # fmt: skip
    assert "rate 50 req/s: 3/3 ok" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["endpoint"] == "chat"
    assert report["load_points"][0]["point"] == {"index": 0, "rate_rps": 50.0}
