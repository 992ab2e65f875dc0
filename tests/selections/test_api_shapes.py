"""API shapes: the `.json` format suffix (it was a 500) and a one-word stored precision."""

from drf_spectacular.generators import SchemaGenerator

from tests.selections.helpers import create_selection


def test_the_json_suffix_creates_a_selection_and_reads_its_computation_status(
    catalog, alice, acme, alice_client, goal_payload
):
    created = alice_client.post(
        "/api/v1/selections.json", goal_payload, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    status = alice_client.get(f"/api/v1/selections/{selection.pk}/candidates/status.json")
    assert status.status_code == 200, status.content
    assert status.json()["status_url"].endswith(f"/selections/{selection.pk}/candidates/status/")


def test_a_precision_stored_as_one_word_reads_back_as_that_word(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    workload = {**selection.workload, "precision": "bf16"}
    type(selection).objects.filter(pk=selection.pk).update(workload=workload)
    body = alice_client.get(f"/api/v1/selections/{selection.pk}/").json()
    assert body["workload"]["precision"] == ["bf16"]


def test_the_schema_lets_a_kept_candidate_have_no_score():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert schema["components"]["schemas"]["KeptCandidate"]["properties"]["score"]["nullable"]
