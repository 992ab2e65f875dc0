from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from django.db import close_old_connections, connection

from apps.decisions.models import DecisionRecord
from tests.decisions.factories import decision_catalog, draft, two_candidate_selection

WRITERS = 8


@pytest.mark.django_db(transaction=True)
def test_concurrent_drafts_get_distinct_consecutive_numbers(acme, alice):
    selection = two_candidate_selection(acme, alice, decision_catalog())
    start = Barrier(WRITERS)

    def write(_: int) -> int:
        start.wait()
        try:
            return draft(alice, acme, selection).number
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        numbers = sorted(pool.map(write, range(WRITERS)))
    close_old_connections()

    assert numbers == list(range(1, WRITERS + 1))
    assert DecisionRecord.objects.count() == WRITERS
