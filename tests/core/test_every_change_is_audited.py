"""Every service function that changes a row writes an audit event in that same transaction.

The walk builds a team's whole world through the services (accounts, catalog, selections,
runners, plans, attempts over the runner API, evidence, decisions, retests), watching every
call (tests/core/audit_observer.py). It then checks two things: no service changed a row in a
transaction without an audit event written there, and every public service function was
walked, so a new one cannot slip past this test unwatched.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.accounts import services as accounts
from apps.audit.services import Actor
from apps.benchmarks import dispatch
from apps.benchmarks import services as benchmarks
from apps.benchmarks.models import JobAttempt
from apps.benchmarks.plan_identity import PlanOptions
from apps.catalog import services as catalog
from apps.catalog.interchange import matrix_frame
from apps.catalog.models import Feature
from apps.decisions import retests
from apps.decisions import services as decisions
from apps.decisions.models import RetestTrigger
from apps.runners import services as runners
from apps.selections import services as selections
from tests.benchmarks.factories import RunnerClient, enrolled_runner, result_document
from tests.catalog.published_rows import sample_row
from tests.conftest import logged_in
from tests.core.audit_observer import observed
from tests.decisions.factories import (
    accepted,
    decision_catalog,
    make_approver,
    text_for,
    two_candidate_selection,
)

pytestmark = pytest.mark.django_db(transaction=True)
EVIDENCE_DATA = Path(__file__).parents[1] / "evidence" / "data"

# Public service functions that read, check or compute, and change no row themselves.
READ_ONLY = {
    "apps.accounts.services.require_role": "a permission check",
    "apps.catalog.services.cell_evidence": "reduces a cell to the values the maturity rule reads",
    "apps.benchmarks.attempts.attempt_of_runner": "reads the attempt a runner claimed",
    "apps.benchmarks.dispatch.routing_verdict": "says where a job would go",
    "apps.benchmarks.dispatch.lease_deadline": "arithmetic on a time",
    "apps.decisions.retests.findings_for": "compares a record's baseline with now",
}
# Changes that are measurements of liveness, not state changes a reviewer reads: they happen
# every few seconds per runner, and each leaves its trace elsewhere (the lease, the log).
TELEMETRY = {
    "apps.runners.services.runner_heartbeat_touch": "the runner's last-heartbeat time",
    "apps.benchmarks.attempts.runner_heartbeat": "the lease's new expiry and the progress line",
    "apps.benchmarks.attempts.attempt_progress": "the job's progress line",
    "apps.benchmarks.attempts.attempt_log_append": "the attempt's log text",
    "apps.benchmarks.dispatch.publish_attempt": "the time the attempt's broker message went out",
    "apps.benchmarks.dispatch.job_route": "a waiting job's reason, refreshed from the fleet "
    "(a change of the job's state is audited)",
}


def _walk(alice, bob, charlie, acme) -> None:
    actor = Actor.for_user(alice)
    user = get_user_model().objects.create_user("dora", password="x-long-password-123")
    accounts.team_create(actor=actor, name="Initech", owner=charlie)
    _, link = accounts.invitation_create(actor_user=alice, team=acme, invitee="dora", role="viewer")
    dora = accounts.invitation_accept(user=user, plaintext=link)
    accounts.membership_role_set(
        actor_user=alice, team=acme, membership_id=dora.pk, role="engineer"
    )
    accounts.membership_remove(actor_user=alice, team=acme, membership_id=dora.pk)
    accounts.membership_ensure(actor=actor, team=acme, user=user, role="viewer")
    withdrawn, _ = accounts.invitation_create(
        actor_user=alice, team=acme, invitee="erin@example.org", role="viewer"
    )
    accounts.invitation_withdraw(actor_user=alice, team=acme, invitation_id=withdrawn.pk)
    _, signup = accounts.invitation_create(
        actor_user=alice, team=acme, invitee="fay@example.org", role="viewer"
    )
    accounts.invitation_sign_up(plaintext=signup, username="fay", password="x-long-password-123")
    token, _ = accounts.api_token_create(actor=actor, user=alice, team=acme, name="ci")
    accounts.api_token_revoke(actor_user=alice, token_id=token.pk)
    accounts.sso_sign_in(
        issuer="https://idp.example", subject="s-1", claims={}, team_roles={"acme": "viewer"}
    )

    rows = decision_catalog()
    curator = Actor.for_user(alice)
    feature = catalog.entry_create(
        actor=curator,
        model=Feature,
        values={"key": "walk_feature", "name": "Walk", "contract": "kv"},
    )
    catalog.entry_update(actor=curator, instance=feature, changes={"name": "Walked"})
    catalog.entry_delete(actor=curator, instance=feature)
    catalog.release_start_from_previous(actor=curator, previous=rows["release"], version="99.0")
    matrix = matrix_frame()
    matrix.loc[matrix.index[0], "note"] = "re-read the docs"
    content = matrix.to_csv(index=False).encode()
    catalog.matrix_import(actor=curator, content=content, file_format="csv", apply=True)
    catalog.published_import(actor=curator, rows=[sample_row()])

    approver = make_approver(bob, acme)
    selection = two_candidate_selection(acme, alice, rows)
    second = selections.selection_create(
        actor_user=alice, team=acme, data={"title": "second", **_goal(selection)}
    )
    selections.candidates_request(actor_user=alice, selection=second)
    selections.candidates_compute(actor_user=alice, selection=second)
    selections.trace_upload(
        actor_user=alice,
        selection=selection,
        name="walk.csv",
        content=b"timestamp,input_tokens,output_tokens\n0,100,10\n2,200,20\n",
        apply=False,
    )
    runner, credential = enrolled_runner(alice, acme, name="walker")
    runners.runner_probe(runner=runner, probe=runner.probe)
    options = PlanOptions(run_mode="simulated", request_count=4, load_points=({"rate_rps": 1.0},))
    plan = benchmarks.plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=options, title="walk"
    )
    api = RunnerClient(credential)
    attempt = JobAttempt.objects.filter(job__plan=plan).order_by("pk").first()
    for response in (
        api.post(f"attempts/{attempt.pk}/claim"),
        api.post("heartbeat", {"attempt_id": attempt.pk}),
        api.post(f"attempts/{attempt.pk}/progress", {"load_point": 0, "done": 1, "total": 4}),
        api.post(f"attempts/{attempt.pk}/log", {"offset": 0, "text": "walking\n"}),
        api.upload(attempt.pk, result_document(0), key=f"walk-{attempt.pk}"),
        api.post(f"attempts/{attempt.pk}/quality", {"outputs": [{"id": "add", "text": "12"}]}),
        api.post(f"attempts/{attempt.pk}/finish", {"state": "succeeded", "reason": ""}),
    ):
        assert response.status_code in (200, 201), response.content
    other = JobAttempt.objects.filter(job__plan=plan).exclude(job=attempt.job).first()
    benchmarks.job_cancel(actor_user=alice, team=acme, job_id=other.job_id)
    benchmarks.plan_cancel(actor_user=alice, team=acme, plan_id=plan.pk)
    dispatch.reap_expired_leases(now=timezone.now() + timedelta(days=1))
    imported = logged_in(alice).post(
        "/api/v1/evidence/imports/",
        {
            "selection": selection.pk,
            "tool": "aiperf",
            "candidate": selection.candidates.order_by("rank").first().pk,
            "identity": '{"simulated": true}',
            "summary": _tool_file("aiperf/profile_export_aiperf.json"),
            "records": _tool_file("aiperf/profile_export.jsonl"),
        },
    )
    assert imported.status_code == 201, imported.content

    record = accepted(alice, approver, acme, selection, simulation_only=True)
    newer = decisions.record_supersede(actor_user=alice, team=acme, record_id=record.pk)
    decisions.record_update(
        actor_user=alice, team=acme, record_id=newer.pk, text=text_for(selection, title="Walk 2")
    )
    decisions.record_propose(actor_user=alice, team=acme, record_id=newer.pk)
    decisions.record_reject(actor_user=approver, team=acme, record_id=newer.pk, reason="no")
    catalog.entry_update(actor=curator, instance=rows["release"], changes={"notes": "re-check"})
    retests.records_evaluate(record_ids=[record.pk], now=timezone.now() + timedelta(days=400))
    trigger = RetestTrigger.objects.filter(record=record).first()
    retests.retest_plan_create(actor_user=alice, team=acme, trigger_id=trigger.pk)
    retests.trigger_acknowledge(actor_user=alice, team=acme, trigger_id=trigger.pk)
    decisions.record_deprecate(actor_user=alice, team=acme, record_id=record.pk, reason="old")

    selections.selection_update(
        actor_user=alice, selection=selection, data={"title": "walked", **_goal(selection)}
    )
    selections.selection_archive(actor_user=alice, selection=selection)
    runners.runner_rotate(actor_user=alice, team=acme, runner_id=runner.pk)
    runners.runner_revoke(actor_user=alice, team=acme, runner_id=runner.pk)


def _tool_file(path: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(Path(path).name, (EVIDENCE_DATA / path).read_bytes())


def _goal(selection) -> dict:
    workload = {**selection.workload, "model": selection.model.slug}
    return {"workload": workload, "slo": selection.slo, "constraints": {}}


def test_every_service_that_changes_a_row_audits_it_in_the_same_transaction(
    alice, bob, charlie, acme
):
    with observed() as observer:
        _walk(alice, bob, charlie, acme)

    unaudited = {
        name: tables for name, tables in observer.unaudited.items() if name not in TELEMETRY
    }
    assert unaudited == {}
    walked = observer.called | set(READ_ONLY) | set(TELEMETRY)
    assert set(observer.functions.values()) - walked == set()
