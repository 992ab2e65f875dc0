import pytest
from django.db import transaction
from django.test import override_settings

from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record

pytestmark = pytest.mark.django_db


def test_healthz_says_alive(client):
    assert client.get("/healthz").json() == {"status": "alive"}


def test_readyz_is_ready_when_database_and_broker_answer(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["broker"]["ok"] is True


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", CELERY_BROKER_TRANSPORT_OPTIONS={})
def test_readyz_answers_503_when_the_broker_is_unreachable(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True


def test_a_request_id_is_created_and_returned(client):
    assert len(client.get("/healthz")["X-Request-ID"]) == 32


def test_a_callers_request_id_is_kept_and_reaches_the_audit_event(alice_client):
    response = alice_client.post(
        "/accounts/profile/", {"name": "ci"}, HTTP_X_REQUEST_ID="trace-abc-123"
    )
    assert response["X-Request-ID"] == "trace-abc-123"
    assert AuditEvent.objects.get(action="api_token.create").request_id == "trace-abc-123"


def test_an_unsafe_request_id_is_replaced(client):
    assert (
        client.get("/healthz", HTTP_X_REQUEST_ID="bad id\nwith newline")["X-Request-ID"] != "bad id"
    )


def test_metrics_count_requests_by_view(client):
    before = _count(client.get("/metrics").content.decode())
    client.get("/healthz")
    client.get("/healthz")
    assert _count(client.get("/metrics").content.decode()) == before + 2


def _count(text: str) -> int:
    label = 'stackselect_http_requests_total{method="GET",status="200",view="core:healthz"}'
    line = next((line for line in text.splitlines() if line.startswith(label)), f"{label} 0")
    return int(line.rsplit(" ", 1)[1])


def test_the_home_page_names_every_section(alice_client, alice, acme):
    with transaction.atomic():
        audit_record(actor=Actor.for_user(alice), action="x", object_type="t", team=acme)
    html = alice_client.get("/").content.decode()
    for section in ("Selections", "Catalog", "Runners", "Decisions", "Audit"):
        assert section in html


def test_an_unknown_api_path_is_a_json_404_and_an_unknown_page_is_html(alice_client):
    api = alice_client.get("/api/runner/v1/attempts/AAA/claim")
    assert api.status_code == 404 and api.json()["code"] == "not_found"
    page = alice_client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
