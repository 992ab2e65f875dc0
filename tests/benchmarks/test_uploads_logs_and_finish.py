import gzip
import json

import pytest
from django.test import override_settings

from apps.benchmarks.models import JobLog, ResultUpload
from apps.evidence.models import LoadPointResult
from tests.benchmarks.factories import result_document


@pytest.fixture
def claimed(attempt, sim_runner):
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    return attempt, api


def test_the_same_upload_sent_twice_is_stored_once(claimed):
    attempt, api = claimed
    first = api.upload(attempt.pk, result_document(0), key="a7-lp0-c0")
    assert first.status_code == 201, first.content
    again = api.upload(attempt.pk, result_document(0), key="a7-lp0-c0")
    assert again.status_code == 200
    assert again.json()["upload_id"] == first.json()["upload_id"]
    upload = ResultUpload.objects.get()
    assert upload.record_count == 4
    assert LoadPointResult.objects.get(run__job=attempt.job).summary["ttft_s"]["p50"] == 0.1
    assert gzip.decompress(bytes(upload.body)) == json.dumps(result_document(0)).encode()


def test_the_same_chunk_under_a_new_key_is_a_conflict(claimed):
    attempt, api = claimed
    api.upload(attempt.pk, result_document(0), key="k1")
    response = api.upload(attempt.pk, result_document(0), key="k2")
    assert response.status_code == 409 and response.json()["code"] == "duplicate_chunk"
    assert ResultUpload.objects.count() == 1


@pytest.mark.parametrize(
    ("document", "gz", "status"),
    [
        ({**result_document(0), "load_point_index": 9}, True, 400),
        ({**result_document(0), "records": [{"index": 0}]}, True, 400),
        (result_document(0), False, 400),
    ],
)
def test_a_bad_upload_is_a_400_and_stores_nothing(claimed, document, gz, status):
    attempt, api = claimed
    response = api.upload(attempt.pk, document, key="bad", gz=gz)
    assert response.status_code == status
    assert not ResultUpload.objects.exists()


def test_an_upload_over_the_size_limit_is_a_413(claimed):
    attempt, api = claimed
    with override_settings(BENCHMARK_UPLOAD_MAX_BYTES=1024):
        big = result_document(
            0,
            records=[
                {
                    "index": i,
                    "send_s": i * 0.001,
                    "ttft_s": 0.1,
                    "itl_s": [i * 1e-7] * 50,
                    "e2e_s": 0.2,
                    "input_tokens": 1,
                    "output_tokens": 50,
                    "error": None,
                }
                for i in range(200)
            ],
        )
        response = api.upload(attempt.pk, big, key="big")
    assert response.status_code == 413
    assert not ResultUpload.objects.exists()


def test_an_upload_without_idempotency_key_is_refused(claimed):
    attempt, api = claimed
    assert api.upload(attempt.pk, result_document(0), key="").status_code == 400


def test_the_log_appends_only_at_its_length(claimed):
    attempt, api = claimed
    first = api.post(f"attempts/{attempt.pk}/log", {"offset": 0, "text": "engine up\n"})
    assert first.json() == {"next_offset": 10}
    stale = api.post(f"attempts/{attempt.pk}/log", {"offset": 0, "text": "engine up\n"})
    assert stale.status_code == 409 and stale.json()["expected_offset"] == 10
    api.post(f"attempts/{attempt.pk}/log", {"offset": 10, "text": "warm-up done\n"})
    assert JobLog.objects.get(attempt=attempt).text == "engine up\nwarm-up done\n"


def test_finishing_with_every_load_point_stored_succeeds_the_job_and_the_plan(claimed, plan):
    attempt, api = claimed
    api.upload(attempt.pk, result_document(0), key="lp0")
    api.upload(attempt.pk, result_document(1), key="lp1")
    response = api.post(f"attempts/{attempt.pk}/finish", {"state": "succeeded"})
    assert response.status_code == 200
    assert response.json()["job_state"] == "succeeded"
    plan.refresh_from_db()
    assert plan.state == "succeeded" and plan.finished_at is not None
    again = api.post(f"attempts/{attempt.pk}/finish", {"state": "succeeded"})
    assert again.status_code == 200
    late = api.upload(attempt.pk, result_document(1), key="lp1-late")
    assert late.status_code == 409


def test_a_success_without_all_results_fails_the_job_saying_which_are_missing(claimed, plan):
    attempt, api = claimed
    api.upload(attempt.pk, result_document(0), key="lp0")
    api.post(f"attempts/{attempt.pk}/finish", {"state": "succeeded"})
    job = plan.jobs.get()
    assert job.state == "failed"
    assert "load point(s) [1]" in job.state_reason
    plan.refresh_from_db()
    assert plan.state == "failed"


def test_a_failed_attempt_fails_the_job_with_the_runners_reason(claimed, plan):
    attempt, api = claimed
    api.post(f"attempts/{attempt.pk}/finish", {"state": "failed", "reason": "engine OOM"})
    job = plan.jobs.get()
    assert job.state == "failed" and "engine OOM" in job.state_reason
