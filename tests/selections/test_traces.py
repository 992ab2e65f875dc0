"""Trace upload: CSV and JSONL parsing, the derived rate and distributions, bad files."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.selections.models import WorkloadTrace
from apps.selections.replay import resolved_workload
from apps.selections.services import candidates_compute
from apps.selections.traces import parse_trace
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db

# 5 requests over 8 s: 4 gaps, so a mean rate of 4 / 8 = 0.5 requests/s.
CSV = (
    "timestamp,input_tokens,output_tokens,prefix_id\n"
    "0,100,10,sys\n2,200,20,sys\n4,300,30,\n6,400,40,\n8,500,50,other\n"
)


def _upload(client, selection, name, content):
    file = SimpleUploadedFile(name, content.encode())
    return client.post(f"/api/v1/selections/{selection.pk}/traces/", {"file": file})


def test_a_csv_trace_sets_the_rate_and_empirical_lengths_of_the_workload(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    response = _upload(alice_client, selection, "day.csv", CSV)

    assert response.status_code == 201, response.json()
    summary = response.json()["summary"]
    assert summary["mean_rate_rps"] == pytest.approx(0.5)
    assert summary["isl_mean"] == 300
    assert summary["prefix_share"] == pytest.approx(2 / 5)  # "sys" occurs twice
    selection.refresh_from_db()
    assert selection.workload["isl"] == {"kind": "empirical", "values": [100, 200, 300, 400, 500]}
    assert selection.workload["osl"]["values"] == [10, 20, 30, 40, 50]
    # Evenly spaced arrivals: gap CV 0, so the trace replays as a constant process.
    assert selection.workload["arrival"] == {"process": "constant", "rate_rps": 0.5}
    assert WorkloadTrace.objects.get().row_count == 5


def test_a_jsonl_trace_is_read_line_by_line():
    lines = [{"timestamp": t, "input_tokens": 10 + t, "output_tokens": 5} for t in (0, 1, 3)]
    content = "\n".join(json.dumps(line) for line in lines).encode()

    rows = parse_trace(content, filename="trace.jsonl")

    assert [row["input_tokens"] for row in rows] == [10, 11, 13]


def test_a_csv_without_the_required_columns_is_a_400_naming_the_file(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    response = _upload(alice_client, selection, "bad.csv", "time,isl\n0,1\n")

    assert response.status_code == 400
    assert "input_tokens" in response.json()["file"][0]
    assert not WorkloadTrace.objects.exists()


@pytest.mark.parametrize("length", ["-3", "10000001"])
def test_a_trace_row_with_a_length_out_of_range_is_rejected_with_its_row_number(
    catalog, alice, acme, alice_client, goal_payload, length
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    content = f"timestamp,input_tokens,output_tokens\n0,10,5\n1,{length},5\n"

    response = _upload(alice_client, selection, "bad.csv", content)

    assert response.status_code == 400
    assert "rows[1].input_tokens" in response.json()["file"][0]
    assert not WorkloadTrace.objects.exists()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bad.csv", "timestamp,input_tokens,output_tokens,prefix_id\n0,10,5,sys\n1,11,5,s\x00\n"),
        (
            "bad.jsonl",
            '{"timestamp": 0, "input_tokens": 10, "output_tokens": 5}\n'
            '{"timestamp": 1, "input_tokens": 11, "output_tokens": 5, "prefix_id": "s\\u0000"}\n',
        ),
    ],
)
def test_a_trace_prefix_id_holding_nul_is_a_400_naming_its_row_and_nothing_is_stored(
    catalog, alice, acme, alice_client, goal_payload, name, content
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    response = _upload(alice_client, selection, name, content)

    assert response.status_code == 400
    assert response.json() == {"file": ["rows[1].prefix_id: NUL characters are not accepted"]}
    assert not WorkloadTrace.objects.exists()


def test_the_trace_upload_page_says_a_prefix_id_holding_nul_is_refused(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    content = b"timestamp,input_tokens,output_tokens,prefix_id\n0,1,1,a\n1,1,1,\x00\n"
    upload = SimpleUploadedFile("bad.csv", content)

    url = f"/selections/{selection.pk}/traces/"
    response = alice_client.post(url, {"file": upload}, follow=True)

    assert response.status_code == 200
    assert "NUL characters are not accepted" in response.content.decode()
    assert not WorkloadTrace.objects.exists()


def test_charlie_cannot_upload_a_trace_to_alices_selection(
    catalog, alice, acme, charlie_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    assert _upload(charlie_client, selection, "day.csv", CSV).status_code == 404


def test_a_trace_with_negative_timestamps_replays_its_gaps_from_zero(
    catalog, alice, acme, alice_client, goal_payload
):
    """It was stored and applied, then every candidate computation of the selection failed on
    `arrival.timestamps: must be >= 0.0`."""
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    file = SimpleUploadedFile(
        "neg.csv", b"timestamp,input_tokens,output_tokens\n-5,100,10\n1,100,10\n"
    )

    response = alice_client.post(
        f"/api/v1/selections/{selection.pk}/traces/", {"file": file, "replay": "true"}
    )

    assert response.status_code == 201, response.json()
    selection.refresh_from_db()
    replay = resolved_workload(selection.workload, team=acme)
    assert replay["arrival"]["timestamps"] == [0.0, 6.0]
    computed = candidates_compute(actor_user=alice, selection=selection)
    assert computed.candidates.filter(outcome="kept").exists()
