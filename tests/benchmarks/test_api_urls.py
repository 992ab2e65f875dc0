"""The API's URLs: the `.json` format suffix reaches the actions, a non-numeric id is a 404."""


def test_a_plan_is_cancelled_through_the_json_suffix(plan, alice_client):
    response = alice_client.post(f"/api/v1/benchmarks/plans/{plan.pk}/cancel.json")
    assert response.status_code == 200, response.content
    plan.refresh_from_db()
    assert plan.jobs.get().cancel_requested is True


def test_a_job_is_cancelled_through_the_json_suffix(plan, alice_client):
    job = plan.jobs.get()
    response = alice_client.post(f"/api/v1/benchmarks/jobs/{job.pk}/cancel.json")
    assert response.status_code == 200, response.content
    job.refresh_from_db()
    assert job.cancel_requested is True


def test_a_plan_id_that_is_not_a_number_is_a_404_not_a_500(alice, alice_client):
    assert alice_client.post("/api/v1/benchmarks/plans/null,null/cancel/").status_code == 404
    assert alice_client.post("/api/v1/benchmarks/jobs/1x/cancel/").status_code == 404
