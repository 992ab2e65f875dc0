"""The job runner against a fake runner API and the real simulated engine subprocess."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stackselect_runner.api import RetryPolicy, RunnerApi
from stackselect_runner.config import RunnerSettings
from stackselect_runner.jobrun import JobRunner, Outcome
from stackselect_runner.uploads import idempotency_key

from .conftest import FAST_STEP_COST, MODEL
from .fake_api import CREDENTIAL, FakeRunnerServer, serve, unused_loopback_url

ATTEMPT = 7
QUICK_RETRY = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05)


def job_spec(requests: int, load_points: list[dict[str, Any]], **engine_options: Any) -> dict:
    return {
        "attempt_id": ATTEMPT,
        "job_id": 3,
        "plan_id": 1,
        "identity": {"model": MODEL, "simulated": True},
        "engine": {
            "adapter": "simulated",
            "model": "checkpoint/of-the-model",
            "served_model_name": MODEL,
            "options": {
                "step_cost": FAST_STEP_COST.as_dict(),
                "time_scale": 0.1,
                **engine_options,
            },
        },
        "harness": {"endpoint": "completions", "timeout_s": 30, "warmup_requests": 1},
        "requests": [
            {"index": i, "arrival_s": float(i), "input_tokens": 30, "output_tokens": 4}
            for i in range(requests)
        ],
        "load_points": load_points,
    }


@pytest.fixture
def fake_api() -> Iterator[FakeRunnerServer]:
    with serve(FakeRunnerServer()) as server:
        yield server


def job_runner(server: FakeRunnerServer, tmp_path: Path, chunk_records: int = 5000) -> JobRunner:
    settings = RunnerSettings(
        work_dir=tmp_path / "work",
        engine_ready_timeout_s=20,
        engine_stop_grace_s=5,
        report_interval_s=0.1,
        upload_chunk_records=chunk_records,
    )
    api = RunnerApi(server.url, CREDENTIAL, retry=QUICK_RETRY)
    return JobRunner(api, settings, heartbeat_interval_s=0.2)


def engine_port(log_text: str) -> int:
    """The runner's header line in the engine log names the engine's URL."""
    header = next(line for line in log_text.splitlines() if "launching simulated" in line)
    return int(header.rsplit(":", 1)[1])


def is_listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_claimed_attempt_uploads_one_gzip_upload_per_load_point_and_finishes_succeeded(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    fake_api.job_spec = job_spec(4, [{"index": 0, "concurrency": 2}, {"index": 1, "rate_rps": 20}])
    # The first upload's answer is lost twice (503); the retry must carry the same key.
    fake_api.failures["/results"] = 2
    outcome = job_runner(fake_api, tmp_path).run(ATTEMPT)
    assert outcome is Outcome.SUCCEEDED
    paths = [call.path for call in fake_api.calls if call.path != "/heartbeat"]
    assert paths[0] == f"/attempts/{ATTEMPT}/claim"
    assert paths[-1] == f"/attempts/{ATTEMPT}/finish"
    assert fake_api.calls[-1].body == {"state": "succeeded", "reason": "measured 2 load point(s)"}
    uploads = fake_api.calls_to("/results")
    assert len(uploads) == 4  # two refused with 503, then one per load point
    assert all(call.headers["Content-Encoding"] == "gzip" for call in uploads)
    assert [call.headers["Idempotency-Key"] for call in uploads] == [
        idempotency_key(ATTEMPT, 0, 0),
        idempotency_key(ATTEMPT, 0, 0),
        idempotency_key(ATTEMPT, 0, 0),
        idempotency_key(ATTEMPT, 1, 0),
    ]
    stored = [fake_api.uploads[idempotency_key(ATTEMPT, point, 0)] for point in (0, 1)]
    assert [upload["load_point"] for upload in stored] == [
        {"index": 0, "concurrency": 2},
        {"index": 1, "rate_rps": 20},
    ]
    for upload in stored:
        assert (upload["chunk_index"], upload["chunk_count"]) == (0, 1)
        assert [record["output_tokens"] for record in upload["records"]] == [4, 4, 4, 4]
        assert all(record["error"] is None for record in upload["records"])
        assert upload["engine"]["version"] == "stackselect-simulated"
        assert upload["engine"]["effective_config"]["served_model_name"] == MODEL
        assert upload["harness"]["name"] == "stackselect-runner"


def test_progress_and_the_whole_engine_log_reach_the_server_with_consistent_offsets(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    fake_api.job_spec = job_spec(3, [{"index": 0, "concurrency": 3}])
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.SUCCEEDED
    progress = [call.body for call in fake_api.calls_to("/progress")]
    assert {"load_point": 0, "done": 3, "total": 3, "message": "concurrency 3: 3/3 requests"} in (
        progress
    )
    local_log = (tmp_path / "work" / f"attempt-{ATTEMPT}" / "engine.log").read_text()
    assert fake_api.logs[ATTEMPT] == local_log
    assert "Running on" in local_log
    offsets = [call.body["offset"] for call in fake_api.calls_to("/log")]
    assert offsets == sorted(offsets) and offsets[0] == 0
    beats = [call.body for call in fake_api.calls_to("/heartbeat")]
    assert beats and all(beat["attempt_id"] == ATTEMPT for beat in beats)


def test_a_refused_claim_drops_the_attempt_without_launching_an_engine(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    fake_api.job_spec = job_spec(2, [{"index": 0, "concurrency": 1}])
    fake_api.claim_refusal = "superseded"
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.DROPPED
    assert [call.path for call in fake_api.calls] == [f"/attempts/{ATTEMPT}/claim"]
    assert not (tmp_path / "work").exists()


def test_a_cancel_in_a_heartbeat_answer_stops_the_run_and_finishes_cancelled(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    # At 0.5 req/s the ten requests would take about 20 s; the cancel must cut that short.
    fake_api.job_spec = job_spec(10, [{"index": 0, "rate_rps": 0.5}, {"index": 1, "rate_rps": 1}])
    fake_api.cancel_when_progress = True
    started = time.monotonic()
    outcome = job_runner(fake_api, tmp_path).run(ATTEMPT)
    assert outcome is Outcome.CANCELLED
    assert time.monotonic() - started < 10
    assert fake_api.calls[-1].body == {"state": "cancelled", "reason": "cancelled on request"}
    assert fake_api.uploads == {}
    assert not is_listening(engine_port(fake_api.logs[ATTEMPT]))


def test_an_engine_that_fails_to_start_finishes_failed_with_its_log_tail(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    fake_api.job_spec = job_spec(2, [{"index": 0, "concurrency": 1}], max_num_seqs=0)
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.FAILED
    finish = fake_api.calls[-1].body
    assert finish["state"] == "failed"
    assert finish["reason"].startswith("engine failed to start: engine exited with code 1")
    assert "max_num_seqs must be >= 1" in finish["reason"]
    assert "max_num_seqs must be >= 1" in fake_api.logs[ATTEMPT]
    assert fake_api.uploads == {}


def test_an_invalid_job_spec_finishes_failed_naming_the_field(
    fake_api: FakeRunnerServer, tmp_path: Path
) -> None:
    spec = job_spec(2, [{"index": 0, "concurrency": 1}])
    spec["harness"]["endpoint"] = "embeddings"
    fake_api.job_spec = spec
    assert job_runner(fake_api, tmp_path).run(ATTEMPT) is Outcome.FAILED
    reason = fake_api.calls[-1].body["reason"]
    assert reason.startswith("invalid job spec: endpoint must be one of")


def test_a_claim_the_api_never_answers_is_reported_for_a_later_retry(tmp_path: Path) -> None:
    api = RunnerApi(unused_loopback_url(), CREDENTIAL, retry=QUICK_RETRY)
    runner = JobRunner(api, RunnerSettings(work_dir=tmp_path), heartbeat_interval_s=0.2)
    assert runner.run(ATTEMPT) is Outcome.CLAIM_UNREACHABLE
