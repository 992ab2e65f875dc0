"""Runner uploads into evidence: COPY-stored samples, summaries, chunks, refusals."""

from __future__ import annotations

import gzip
import json
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from apps.core.parsers import loads_items_raw
from apps.evidence import sample_store
from apps.evidence.ingest import ingest_upload
from apps.evidence.models import EvidenceRun, LoadPointResult, Sample
from apps.evidence.sample_store import read_samples
from apps.evidence.schema import UploadError, parse_upload
from tests.evidence.factories import attempt_for, result_upload
from tests.evidence.samples import failed, record, streamed

LOAD_POINT = {"index": 0, "rate_rps": 1.0}


def counts() -> tuple[int, int, int]:
    return EvidenceRun.objects.count(), LoadPointResult.objects.count(), Sample.objects.count()


def ingest(upload, **kwargs):
    with transaction.atomic():
        return ingest_upload(upload=upload, **kwargs)


def test_it_stores_every_sample_through_copy_and_a_summary(plan, candidates):
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's; the embedded SQLite set-up uses bulk_create")
    attempt = attempt_for(plan, candidates[0])
    records = [streamed(i, ttft_s=0.1 * (i + 1), gaps=[0.02, 0.04]) for i in range(4)]
    upload = result_upload(attempt, [*records, failed(4)], load_point=LOAD_POINT)

    with (
        CaptureQueriesContext(connection) as queries,
        mock.patch.object(
            sample_store, "copy_statement", wraps=sample_store.copy_statement
        ) as copy,
    ):
        result = ingest(upload)

    assert copy.call_count == 1
    assert not [q for q in queries.captured_queries if 'INTO "evidence_sample"' in q["sql"]]
    stored = Sample.objects.filter(result=result).order_by("index")
    assert stored.count() == 5
    first = stored[0]
    assert first.ttft_s == pytest.approx(0.1)
    # TPOT = (E2E - TTFT) / (output tokens - 1) = 0.06 / 2
    assert first.tpot_s == pytest.approx(0.03)
    assert np.frombuffer(bytes(first.itl_s), "<f8").tolist() == [0.02, 0.04]
    failure = stored[4]
    assert (failure.ttft_s, failure.e2e_s, failure.tpot_s) == (None, None, None)
    assert failure.error == "HTTP 500: boom"
    summary = result.summary
    assert (summary["requests"], summary["completed"], summary["errors"]) == (5, 4, 1)
    # TTFTs 0.1, 0.2, 0.3, 0.4: P50 by linear interpolation is 0.25.
    assert summary["ttft_s"]["p50"] == pytest.approx(0.25)
    run = result.run
    assert run.source == "runner" and run.job_id == attempt.job_id
    assert run.raw_checksums[0]["sha256"] == upload.sha256
    assert run.identity["accelerator"] == "h100-sxm"
    assert run.identity["harness_tool"] == "stackselect-harness"


def test_chunks_of_a_load_point_accumulate_and_are_summarised_once_complete(plan, candidates):
    attempt = attempt_for(plan, candidates[0])
    first = result_upload(
        attempt, [streamed(0, ttft_s=0.1, gaps=[0.02])], load_point=LOAD_POINT, chunk_count=2
    )
    result = ingest(first)
    assert result.summary is None and not result.complete

    second = result_upload(
        attempt,
        [streamed(1, ttft_s=0.3, gaps=[0.02]), streamed(2, ttft_s=0.5, gaps=[0.02])],
        load_point=LOAD_POINT,
        chunk_index=1,
        chunk_count=2,
    )
    result = ingest(second)

    assert result.complete and result.pk == LoadPointResult.objects.get().pk
    assert result.summary["requests"] == 3
    # The median of 0.1, 0.3, 0.5 needs the first chunk's sample: read back from the table.
    assert result.summary["ttft_s"]["p50"] == pytest.approx(0.3)
    assert len(result.run.raw_checksums) == 2


BAD_RECORDS = {
    "nan latency": record(0, ttft_s=float("nan")),
    "negative latency": record(0, e2e_s=-0.2),
    "token count disagreeing with the streamed gaps": record(0, output_tokens=7),
    "unknown field": record(0, colour="blue"),
}


@pytest.mark.parametrize("problem", BAD_RECORDS)
def test_a_bad_upload_is_refused_and_stores_nothing(plan, candidates, problem):
    attempt = attempt_for(plan, candidates[0])
    upload = result_upload(attempt, [record(1), BAD_RECORDS[problem]], load_point=LOAD_POINT)
    before = counts()

    with pytest.raises(UploadError) as refused:
        ingest(upload)

    assert counts() == before == (0, 0, 0)
    assert "records[1]" in str(refused.value)


def test_a_repeated_index_in_a_later_chunk_is_refused_and_the_first_chunk_survives(
    plan, candidates
):
    attempt = attempt_for(plan, candidates[0])
    ingest(result_upload(attempt, [record(0)], load_point=LOAD_POINT, chunk_count=2))
    again = result_upload(attempt, [record(0)], load_point=LOAD_POINT, chunk_index=1, chunk_count=2)

    with pytest.raises(UploadError, match="records: an index was already stored"):
        ingest(again)

    assert Sample.objects.count() == 1


def test_a_refused_copy_marks_the_transaction_for_rollback_without_a_savepoint(plan, candidates):
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's; the embedded SQLite set-up uses bulk_create")
    attempt = attempt_for(plan, candidates[0])
    first = ingest(result_upload(attempt, [record(0)], load_point=LOAD_POINT, chunk_count=2))
    samples = parse_upload({"load_point": LOAD_POINT, "duration_s": 2.0, "records": [record(0)]})

    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        with pytest.raises(sample_store.DuplicateSampleError):
            sample_store.store_samples(result=first, samples=samples)
        # The aborted transaction is not used unseen: Django refuses the next query.
        with pytest.raises(TransactionManagementError):
            LoadPointResult.objects.count()

    # One savepoint: this test's own block; the COPY adds none (it used to add its own).
    assert sum((q["sql"] or "").startswith("SAVEPOINT") for q in queries.captured_queries) == 1
    assert Sample.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_ingest_refuses_to_run_outside_the_callers_transaction(plan, candidates):
    upload = result_upload(attempt_for(plan, candidates[0]), [record(0)], load_point=LOAD_POINT)
    with pytest.raises(RuntimeError, match="inside the transaction"):
        ingest_upload(upload=upload)


def test_every_column_survives_the_binary_copy_of_records_sent_undecoded(plan, candidates):
    attempt = attempt_for(plan, candidates[0])
    records = [
        streamed(0, ttft_s=0.125, gaps=[0.1 / 3, 1e-9, 0.5], finish_reason="length"),
        failed(1, error="HTTP 503: ünavailable\tretry"),
        record(2, itl_s=None, ttft_s=None, output_tokens=1, status=None),
        streamed(70_000, ttft_s=0.2, gaps=[]),
    ]
    upload = result_upload(attempt, records, load_point=LOAD_POINT)
    document = json.loads(gzip.decompress(bytes(upload.body)))
    sent = loads_items_raw(gzip.decompress(bytes(upload.body)), max_containers=None, key="records")

    result = ingest(upload, body=sent)

    expected = parse_upload(document)
    stored = read_samples(
        result=result, load_point=expected.load_point, duration_s=expected.duration_s
    )
    pd.testing.assert_frame_equal(
        stored.records, expected.records.drop(columns="itl_s")[stored.records.columns]
    )
    assert stored.itl_gaps.tolist() == expected.itl_gaps.tolist()
    tpots = Sample.objects.filter(result=result).order_by("index").values_list("tpot_s", flat=True)
    assert list(tpots) == [pytest.approx((0.1 / 3 + 1e-9 + 0.5) / 3), None, None, None]
