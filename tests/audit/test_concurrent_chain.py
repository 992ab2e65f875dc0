import itertools
import threading

import pytest
from django.db import close_old_connections, connection, transaction

from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_chain_first_break
from apps.audit.services import Actor, audit_record

WRITERS = 50


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_audited_writes_leave_one_unbroken_chain():
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            start.wait()
            with transaction.atomic():
                audit_record(
                    actor=Actor.system(f"writer-{n}"),
                    action="race.write",
                    object_type="test.race",
                    object_id=n,
                    after={"n": n},
                )
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    close_old_connections()

    assert errors == []
    events = list(AuditEvent.objects.order_by("id"))
    assert len(events) == WRITERS
    assert all(later.prev_hash == earlier.hash for earlier, later in itertools.pairwise(events))
    assert audit_chain_first_break() is None
