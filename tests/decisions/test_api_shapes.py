"""API shapes: the `.json` suffix and non-numeric ids (were 500s), nullable links in the schema."""

from drf_spectacular.generators import SchemaGenerator

from tests.decisions.factories import draft


def test_a_draft_is_proposed_through_the_json_suffix(alice, acme, alice_client, selection):
    record = draft(alice, acme, selection)
    response = alice_client.post(f"/api/v1/decisions/{record.pk}/propose.json")
    assert response.status_code == 200, response.content
    record.refresh_from_db()
    assert record.status == "proposed"


def test_an_id_that_is_not_a_number_is_a_404_not_a_500(alice_client):
    response = alice_client.post("/api/v1/decisions/null,null/propose/")
    assert response.status_code == 404


def test_the_schema_lets_a_record_lack_its_links_and_deciders():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    record = schema["components"]["schemas"]["Record"]["properties"]
    for link in ("supersedes", "superseded_by", "proposed_by", "decided_by"):
        assert record[link]["nullable"] is True, link
