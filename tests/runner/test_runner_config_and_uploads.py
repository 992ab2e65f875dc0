"""Credentials file, environment settings, upload chunking and log shipping offsets."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from stackselect_runner.api import ApiUnreachable, Conflict
from stackselect_runner.config import (
    ConfigError,
    Credentials,
    RunnerSettings,
    SimulatedHardware,
    config_path,
    load_credentials,
    save_credentials,
)
from stackselect_runner.harness import LoadPoint, LoadPointResult, RequestRecord
from stackselect_runner.logship import LogShipper
from stackselect_runner.uploads import idempotency_key, result_uploads

ENROLL_ANSWER = {
    "runner_id": 5,
    "credential": "ssr_abcdef12_s3cret",
    "broker_url": "redis://127.0.0.1:6379/0",
    "queues": ["runner.5", "pool.1.h100-sxm.1"],
    "heartbeat_interval_s": 10,
}


def test_credentials_are_written_0600_atomically_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "credentials.json"
    credentials = Credentials.from_enrollment(
        "http://host:8000/", ENROLL_ANSWER, SimulatedHardware("h100-sxm", 2)
    )
    save_credentials(credentials, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [item.name for item in path.parent.iterdir()] == ["credentials.json"]
    loaded = load_credentials(path)
    assert loaded == credentials
    assert loaded.url == "http://host:8000"
    assert loaded.simulated == SimulatedHardware("h100-sxm", 2)
    assert loaded.masked_credential() == "ssr_abcdef12_…"


def test_rewriting_credentials_keeps_the_file_private(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text("{}")
    path.chmod(0o644)
    save_credentials(Credentials.from_enrollment("http://h", ENROLL_ANSWER, None), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_config_path_follows_the_environment_variable(tmp_path: Path) -> None:
    assert config_path({"STACKSELECT_RUNNER_CONFIG": str(tmp_path / "c.json")}) == (
        tmp_path / "c.json"
    )
    assert config_path({}).name == "credentials.json"


def test_a_missing_or_incomplete_credentials_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="run `stackselect-runner enroll` first"):
        load_credentials(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"url": "http://h", "runner_id": 5}')
    with pytest.raises(ConfigError, match="missing field 'credential'"):
        load_credentials(broken)


def test_settings_come_from_the_environment_and_reject_bad_numbers() -> None:
    settings = RunnerSettings.from_env(
        {
            "STACKSELECT_RUNNER_BROKER_URL": "redis://other:6379/1",
            "STACKSELECT_RUNNER_SIMULATE_ACCELERATOR": "l40s",
            "STACKSELECT_RUNNER_SIMULATE_GPUS": "4",
            "STACKSELECT_RUNNER_BROKER_TRANSPORT_OPTIONS": '{"data_folder_in": "/q"}',
        }
    )
    assert settings.broker_url == "redis://other:6379/1"
    assert settings.simulated == SimulatedHardware("l40s", 4)
    assert settings.broker_transport_options == {"data_folder_in": "/q"}
    with pytest.raises(ConfigError, match="STACKSELECT_RUNNER_REPORT_INTERVAL_S"):
        RunnerSettings.from_env({"STACKSELECT_RUNNER_REPORT_INTERVAL_S": "soon"})


def result_with(records: int) -> LoadPointResult:
    return LoadPointResult(
        point=LoadPoint(concurrency=2, index=3),
        records=[RequestRecord(index=i, send_s=0.1 * i, input_tokens=8) for i in range(records)],
        started_at_unix=1_700_000_000.0,
        duration_s=1.5,
        warmup_requests=0,
    )


def test_a_large_load_point_is_uploaded_in_chunks_with_stable_keys() -> None:
    engine = {"version": "1", "effective_config": {}}
    chunks = list(result_uploads(9, result_with(5), engine, chunk_records=2))
    assert [key for key, _ in chunks] == [idempotency_key(9, 3, chunk) for chunk in (0, 1, 2)]
    assert [[r["index"] for r in body["records"]] for _, body in chunks] == [[0, 1], [2, 3], [4]]
    assert {body["chunk_count"] for _, body in chunks} == {3}
    assert chunks[0][1]["started_at"] == "2023-11-14T22:13:20+00:00"
    again = list(result_uploads(9, result_with(5), engine, chunk_records=2))
    assert [key for key, _ in again] == [key for key, _ in chunks]


def test_chunks_also_end_at_their_byte_budget_and_split_the_same_way_every_time() -> None:
    result = result_with(6)
    for record in result.records:
        record.send_s = 1.0  # every record as long as the next
    size = len(json.dumps(result.records[0].as_dict())) + 2
    chunks = list(result_uploads(9, result, {}, chunk_records=1000, chunk_bytes=2 * size + 1))
    assert [[r["index"] for r in body["records"]] for _, body in chunks] == [[0, 1], [2, 3], [4, 5]]
    assert {body["chunk_count"] for _, body in chunks} == {3}
    # A record longer than the budget still travels, alone in its chunk.
    alone = list(result_uploads(9, result, {}, chunk_records=1000, chunk_bytes=1))
    assert [len(body["records"]) for _, body in alone] == [1] * 6
    again = list(result_uploads(9, result, {}, chunk_records=1000, chunk_bytes=2 * size + 1))
    assert again == chunks


def test_an_empty_load_point_still_uploads_one_chunk() -> None:
    chunks = list(result_uploads(9, result_with(0), {}, chunk_records=2))
    assert [(body["chunk_index"], body["chunk_count"], body["records"]) for _, body in chunks] == [
        (0, 1, [])
    ]


class LossyLogApi:
    """Stores appends like the server; the first answer is lost after the text was stored."""

    def __init__(self) -> None:
        self.stored = ""
        self.offsets: list[int] = []
        self.lose_next_answer = True

    def append_log(self, attempt_id: int, offset: int, text: str) -> int:
        self.offsets.append(offset)
        if offset != len(self.stored):
            raise Conflict("409", 409, {"expected_offset": len(self.stored)})
        self.stored += text
        if self.lose_next_answer:
            self.lose_next_answer = False
            raise ApiUnreachable("answer lost")
        return len(self.stored)


def test_a_log_append_whose_answer_was_lost_is_not_sent_twice(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("loading weights\n")
    api: Any = LossyLogApi()
    shipper = LogShipper(api, 7, log)
    shipper.ship()  # stored, but the runner never heard back
    with log.open("a") as handle:
        handle.write("ready: 出力 ok\n")
    shipper.ship()
    assert api.stored == "loading weights\nready: 出力 ok\n"
    assert api.offsets == [0, 0, 16]
    assert shipper.offset == len(api.stored)
