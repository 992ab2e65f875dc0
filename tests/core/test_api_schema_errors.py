"""The schema documents the errors each operation really gives, and the answers match it."""

from __future__ import annotations

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.benchmarks.factories import catalog, selection_with_candidates
from tests.conftest import logged_in

OPERATIONS = {
    (path, method): operation
    for path, methods in SchemaGenerator().get_schema(request=None, public=True)["paths"].items()
    for method, operation in methods.items()
}


def test_every_operation_documents_throttling_and_an_unavailable_database():
    for (path, method), operation in OPERATIONS.items():
        assert {"429", "503"} <= set(operation["responses"]), (method, path)
        assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_an_operation_with_a_body_documents_400_413_and_415():
    posted = OPERATIONS[("/api/v1/selections/", "post")]["responses"]
    assert {"400", "401", "403", "413", "415"} <= set(posted)
    assert "404" not in posted  # a new goal names no object by id in its path


def test_a_path_naming_an_object_documents_404_and_a_refusable_write_409():
    accept = OPERATIONS[("/api/v1/decisions/{id}/accept/", "post")]["responses"]
    assert {"404", "409"} <= set(accept)
    read = OPERATIONS[("/api/v1/selections/{id}/", "get")]["responses"]
    assert "404" in read and "409" not in read and "413" not in read


def test_the_anonymous_enroll_documents_no_401():
    assert "401" not in OPERATIONS[("/api/runner/v1/enroll", "post")]["responses"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=Z", "page"),
        ("page=%C2%B2", "page"),  # '²' passes str.isdigit but not int()
        ("page=0", "page"),
        ("page_size=Z", "page_size"),
        ("gpu_count=two", "gpu_count"),
        ("precision=bf17", "precision"),
        ("engine=", "engine"),
        ("colour=red", "colour"),
        ("engine=vllm&engine=sglang", "engine"),
    ],
)
def test_a_bad_candidate_query_is_a_400_naming_the_parameter(
    alice, acme, alice_client, query, field
):
    selection = selection_with_candidates(acme, alice, catalog(), layouts=[("h100-sxm", 1, "bf16")])
    response = alice_client.get(f"/api/v1/selections/{selection.pk}/candidates/?{query}")
    assert response.status_code == 400, response.content
    assert field in response.json()


@pytest.mark.parametrize(
    "query",
    ["page=Z", "page=0", "needs_review=null", "needs_review=", "release=x", "colour=red"],
)
def test_a_bad_list_query_is_a_400_naming_the_parameter(alice_client, query):
    response = alice_client.get(f"/api/v1/catalog/capabilities/?{query}")
    assert response.status_code == 400, response.content
    assert query.split("=")[0] in response.json()


def test_a_page_past_the_last_is_a_404_with_a_code(alice_client):
    response = alice_client.get("/api/v1/catalog/capabilities/?page=999")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_a_missing_object_answers_404_with_a_code(alice_client):
    response = alice_client.get("/api/v1/catalog/engines/no-such-engine/")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def _documented_400(path: str, method: str) -> dict:
    """The operation's 400 body schema, with the components its references point into."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    schema = OPERATIONS[(path, method)]["responses"]["400"]["content"]["application/json"]
    return {**schema["schema"], "components": document["components"]}


def test_a_refused_import_form_matches_the_documented_400_beside_the_rows_with_errors(curator):
    client = logged_in(curator)

    response = client.post("/api/v1/catalog/matrix/import/", {})

    assert response.status_code == 400
    assert set(response.json()) == {"file", "file_format"}
    jsonschema.validate(response.json(), _documented_400("/api/v1/catalog/matrix/import/", "post"))


def test_a_path_value_holding_nul_matches_the_documented_400_of_every_path_operation(alice):
    for (path, method), operation in OPERATIONS.items():
        if "{" in path:
            assert "400" in operation["responses"], (method, path)

    response = logged_in(alice).get("/api/v1/catalog/engines/vllm%00/")

    assert response.status_code == 400
    jsonschema.validate(response.json(), _documented_400("/api/v1/catalog/engines/{slug}/", "get"))
