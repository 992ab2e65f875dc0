"""Importing another tool's files: a run with samples, checksums and an audit event; bad
files refused with nothing stored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.audit.models import AuditEvent
from apps.core.parsers import NUL_REFUSED
from apps.evidence.models import EvidenceRun, LoadPointResult, Sample

DATA = Path(__file__).parent / "data"
URL = "/api/v1/evidence/imports/"


def upload(role: str, path: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(Path(path).name, (DATA / path).read_bytes())


def counts() -> tuple[int, int, int]:
    return EvidenceRun.objects.count(), LoadPointResult.objects.count(), Sample.objects.count()


def test_an_aiperf_import_stores_a_run_with_its_samples_and_file_checksums(
    bob_client, selection, candidates
):
    files = {
        "summary": upload("summary", "aiperf/profile_export_aiperf.json"),
        "records": upload("records", "aiperf/profile_export.jsonl"),
    }
    response = bob_client.post(
        URL,
        {
            "selection": selection.pk,
            "tool": "aiperf",
            "candidate": candidates[0].pk,
            "identity": '{"simulated": true}',
            **files,
        },
    )

    assert response.status_code == 201, response.content
    run = EvidenceRun.objects.get(pk=response.json()["id"])
    assert (run.source, run.tool, run.candidate_id) == ("import", "NVIDIA AIPerf", candidates[0].pk)
    assert run.identity["harness_tool"] == "aiperf" and run.identity["accelerator"] == "h100-sxm"
    digest = hashlib.sha256((DATA / "aiperf/profile_export.jsonl").read_bytes()).hexdigest()
    assert {"role": "records", "sha256": digest}.items() <= run.raw_checksums[0].items()
    result = run.results.get()
    assert result.summary["requests"] == Sample.objects.filter(result=result).count() > 0
    event = AuditEvent.objects.get(action="evidence.import")
    assert event.after["files"] == run.raw_checksums


def test_a_broken_file_is_refused_with_the_role_named_and_nothing_stored(bob_client, selection):
    before = counts()
    response = bob_client.post(
        URL,
        {
            "selection": selection.pk,
            "tool": "guidellm",
            "report": SimpleUploadedFile("benchmarks.json", b'{"benchmarks": ['),
        },
    )

    assert response.status_code == 400
    assert "report: not JSON" in response.json()["files"][0]
    assert counts() == before
    assert not AuditEvent.objects.filter(action="evidence.import").exists()


def test_a_tool_without_its_files_is_refused_by_name(bob_client, selection):
    response = bob_client.post(
        URL,
        {
            "selection": selection.pk,
            "tool": "aiperf",
            "summary": upload("s", "guidellm/benchmarks.json"),
        },
    )

    assert response.status_code == 400
    assert "records (profile_export.jsonl)" in response.json()["files"][0]


def test_an_identity_that_contradicts_the_files_is_refused(bob_client, selection):
    response = bob_client.post(
        URL,
        {
            "selection": selection.pk,
            "tool": "guidellm",
            "identity": '{"harness_tool": "something else"}',
            "report": upload("report", "guidellm/benchmarks.json"),
        },
    )

    assert response.status_code == 400
    assert "identity.harness_tool" in response.json()["identity"][0]
    assert counts() == (0, 0, 0)


def test_the_same_files_are_not_imported_twice(bob_client, selection):
    def send():
        return bob_client.post(
            URL,
            {
                "selection": selection.pk,
                "tool": "guidellm",
                "report": upload("report", "guidellm/benchmarks.json"),
            },
        )

    assert send().status_code == 201
    again = send()
    assert again.status_code == 400 and "imported already" in again.json()["files"][0]


def test_charlie_cannot_import_into_alices_selection(charlie_client, selection):
    response = charlie_client.post(
        URL,
        {
            "selection": selection.pk,
            "tool": "guidellm",
            "report": upload("report", "guidellm/benchmarks.json"),
        },
    )

    assert response.status_code == 404
    assert counts() == (0, 0, 0)


def test_the_import_page_stores_a_run_and_returns_to_the_evidence(alice_client, selection):
    response = alice_client.post(
        f"/evidence/selections/{selection.pk}/import/",
        {"tool": "guidellm", "report": upload("report", "guidellm/benchmarks.json")},
    )

    assert response.status_code == 302
    assert response["Location"] == f"/evidence/selections/{selection.pk}/"
    assert EvidenceRun.objects.get().results.count() >= 1


def changed(path: str, **changes: str) -> SimpleUploadedFile:
    document = {**json.loads((DATA / path).read_text()), **changes}
    return SimpleUploadedFile(Path(path).name, json.dumps(document).encode())


VLLM = "vllm/vllm-bench-serve-format.json"
REFUSED_CASES = {
    "a request's error message": (
        lambda: {
            "tool": "vllm",
            "result": changed(VLLM, errors=["", "a\x00b"] + [""] * 3),
        },
        "files",
        f"records[1].error: {NUL_REFUSED}",
    ),
    "the model name in the files": (
        lambda: {"tool": "vllm", "result": changed(VLLM, model_id="sim\x00")},
        "files",
        f"the vllm bench serve files give identity.model: {NUL_REFUSED}",
    ),
    "the tool version in the files": (
        lambda: {
            "tool": "aiperf",
            "summary": changed("aiperf/profile_export_aiperf.json", aiperf_version="0.13\x00"),
            "records": upload("records", "aiperf/profile_export.jsonl"),
        },
        "files",
        f"the NVIDIA AIPerf files give identity.harness_version: {NUL_REFUSED}",
    ),
    "a stated identity value": (
        lambda: {
            "tool": "vllm",
            "result": upload("result", VLLM),
            "identity": '{"precision": {"weights": "bf16\\u0000"}}',
        },
        "identity",
        f"identity.precision.weights: {NUL_REFUSED}",
    ),
    "a stated GPU count no column holds": (
        lambda: {
            "tool": "vllm",
            "result": upload("result", VLLM),
            "identity": '{"gpu_count": 99999999999}',
        },
        "identity",
        "gpu_count: must be an integer from 1 to 32767",
    ),
}


@pytest.mark.parametrize("case", REFUSED_CASES)
def test_a_value_the_database_cannot_hold_is_refused_naming_where_by_the_api_and_the_page(
    bob_client, alice_client, selection, case
):
    # PostgreSQL stores no NUL in text nor "\u0000" in jsonb, and a GPU count in a small
    # integer: the page had answered 500, the API a 400 that named no field.
    form, field, message = REFUSED_CASES[case]
    response = bob_client.post(URL, {"selection": selection.pk, **form()})
    assert response.status_code == 400
    assert message in response.json()[field][0]

    page = alice_client.post(f"/evidence/selections/{selection.pk}/import/", form())
    assert page.status_code == 200
    errors = page.context["form"].errors
    assert message in errors["__all__" if field == "files" else field][0]
    assert counts() == (0, 0, 0)
    assert not AuditEvent.objects.filter(action="evidence.import").exists()
