import io

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.catalog.models import Capability
from tests.catalog.factories import EVIDENCE
from tests.conftest import logged_in

pytestmark = pytest.mark.django_db

LISTS = ["engines", "releases", "backends", "accelerators", "models", "features", "capabilities"]


def _url(name: str, *args) -> str:
    return reverse(f"catalog-{name}-list" if not args else f"catalog-{name}-detail", args=args)


@pytest.mark.parametrize("name", [n.rstrip("s") for n in LISTS if n != "capabilities"])
def test_every_catalog_list_is_paginated_for_a_signed_in_user(catalog, alice_client, name):
    url = _url({"accelerator": "accelerator", "feature": "feature"}.get(name, name))
    body = alice_client.get(url).json()
    assert body["count"] > 0
    assert len(body["results"]) == min(body["count"], 50)


def test_the_capability_list_filters_by_contract_and_vendor_like_the_matrix(catalog, alice_client):
    body = alice_client.get(_url("capability"), {"contract": "kv", "vendor": "amd"}).json()
    expected = Capability.objects.filter(
        feature__contract="kv",
        release__capabilities__feature__key="hw_amd",
        release__capabilities__maturity__in=["stable", "beta", "experimental"],
        vendor__in=["", "amd"],
    ).distinct()
    assert body["count"] == expected.count() > 0
    assert {row["engine"] for row in body["results"]} <= {
        "vllm",
        "sglang",
        "lmdeploy",
        "tgi",
        "llama-cpp",
        "ollama",
        "llm-d",
    }


def test_a_team_member_who_is_not_staff_cannot_write_through_the_api(catalog, alice_client):
    cell = Capability.objects.first()
    patch = alice_client.patch(
        _url("capability", cell.pk), {"note": "mine now"}, content_type="application/json"
    )
    post = alice_client.post(
        _url("feature"),
        {"key": "x", "name": "X", "contract": "kv"},
        content_type="application/json",
    )
    delete = alice_client.delete(_url("capability", cell.pk))
    assert (patch.status_code, post.status_code, delete.status_code) == (403, 403, 403)
    assert Capability.objects.filter(pk=cell.pk, note=cell.note).exists()


def test_staff_edit_a_cell_through_the_api_with_an_audit_event(catalog, curator):
    client = logged_in(curator)
    cell = Capability.objects.filter(maturity="unknown").first()
    response = client.patch(
        _url("capability", cell.pk),
        {"maturity": "beta", "evidence_url": EVIDENCE},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["maturity"] == "beta"
    event = AuditEvent.objects.filter(action="capability.update").get()
    assert (event.before["maturity"], event.after["maturity"]) == ("unknown", "beta")
    assert event.actor_name == "curator"


def test_the_api_refuses_a_maturity_change_without_evidence(catalog, curator):
    cell = Capability.objects.filter(maturity="unknown").first()
    response = logged_in(curator).patch(
        _url("capability", cell.pk), {"maturity": "stable"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "evidence_url" in response.json()


def test_staff_create_a_feature_through_the_api(catalog, curator):
    response = logged_in(curator).post(
        _url("feature"),
        {"key": "lora_hot_swap", "name": "LoRA hot swap", "contract": "model_format"},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert AuditEvent.objects.filter(action="feature.create", object_repr="LoRA hot swap").exists()


def test_a_model_with_a_dotted_slug_is_reachable_by_slug(catalog, alice_client):
    response = alice_client.get(_url("model", "llama-3.1-8b"))
    assert response.status_code == 200
    assert response.json()["layers"] == 32


def test_the_api_dry_run_import_returns_the_diff_and_bad_rows(catalog, curator):
    client = logged_in(curator)
    export = client.get(reverse("catalog-matrix-export"), {"file_format": "csv"}).content.decode()
    frame = pd.read_csv(io.StringIO(export), dtype=str, keep_default_na=False)
    frame.loc[0, "maturity"] = "solid"
    upload = io.BytesIO(frame.to_csv(index=False).encode())
    upload.name = "matrix.csv"
    response = client.post(reverse("catalog-matrix-import"), {"file": upload, "file_format": "csv"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["row"] == 1
    assert response.json()["applied"] is False


def test_the_openapi_schema_lists_the_catalog_endpoints_without_warnings(db, capsys):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = out.getvalue()
    for name in LISTS:
        assert f"/api/v1/catalog/{name}/" in schema
    assert "/api/v1/catalog/matrix/import/" in schema
