"""A tool file that parses as JSON but is not laid out as the tool writes it (a number where a
list belongs, a string where an object does, lists of different lengths, an infinite token
count) is a 400 naming the files, with nothing stored; a fuzzed import API had answered 500.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.audit.models import AuditEvent
from apps.evidence.models import EvidenceRun, LoadPointResult, Sample

DATA = Path(__file__).parent / "data"
URL = "/api/v1/evidence/imports/"
INFINITE = float("inf")  # json.loads reads the bare token Infinity as this


def _vllm(**changes: Any) -> dict[str, Any]:
    return {**json.loads((DATA / "vllm/vllm-bench-serve-format.json").read_text()), **changes}


def _aiperf_records(change) -> bytes:
    lines = (DATA / "aiperf/profile_export.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    change(rows[0])
    return "\n".join(json.dumps(row) for row in rows).encode()


def _set_metric(name: str, value: Any):
    return lambda row: row["metrics"].__setitem__(name, value)


VLLM_SHAPES = {
    "a count for a list": _vllm(ttfts=5),
    "a number for a request's gaps": _vllm(itls=[5.0] * 5),
    "an object for a length": _vllm(input_lens=[{}] * 5),
    "an object for the duration": _vllm(duration={}),
    "a number for an error": _vllm(errors=[1] * 5),
    "an object for the rate": _vllm(request_rate={}),
    "an infinite length": _vllm(input_lens=[INFINITE] * 5),
}


@pytest.mark.parametrize("document", VLLM_SHAPES.values(), ids=VLLM_SHAPES)
def test_a_vllm_result_of_another_shape_is_a_400_naming_the_files(bob_client, selection, document):
    before = (EvidenceRun.objects.count(), LoadPointResult.objects.count(), Sample.objects.count())
    result = SimpleUploadedFile("result.json", json.dumps(document).encode())

    response = bob_client.post(URL, {"selection": selection.pk, "tool": "vllm", "result": result})

    assert response.status_code == 400, response.content
    assert "not laid out as vllm bench serve writes them" in response.json()["files"][0]
    after = (EvidenceRun.objects.count(), LoadPointResult.objects.count(), Sample.objects.count())
    assert after == before
    assert not AuditEvent.objects.filter(action="evidence.import").exists()


@pytest.mark.parametrize("starts", [1, 6])
def test_vllm_start_times_not_one_per_request_are_refused_not_cut_short(
    bob_client, selection, starts
):
    document = _vllm(start_times=[100.0 + n for n in range(starts)])
    result = SimpleUploadedFile("result.json", json.dumps(document).encode())

    response = bob_client.post(URL, {"selection": selection.pk, "tool": "vllm", "result": result})

    assert response.status_code == 400, response.content
    assert response.json()["files"] == [f"vllm result: {starts} start_times for 5 requests"]
    assert not EvidenceRun.objects.exists()


@pytest.mark.parametrize(
    "change",
    [_set_metric("usage_completion_tokens", 0), lambda row: row.__setitem__("metrics", [])],
    ids=["a number for a metric", "a list for the metrics"],
)
def test_an_aiperf_record_of_another_shape_is_a_400_naming_the_files(bob_client, selection, change):
    files = {
        "summary": SimpleUploadedFile(
            "profile_export_aiperf.json", (DATA / "aiperf/profile_export_aiperf.json").read_bytes()
        ),
        "records": SimpleUploadedFile("profile_export.jsonl", _aiperf_records(change)),
    }

    response = bob_client.post(URL, {"selection": selection.pk, "tool": "aiperf", **files})

    assert response.status_code == 400, response.content
    assert "not laid out as NVIDIA AIPerf writes them" in response.json()["files"][0]
    assert not EvidenceRun.objects.exists()
