"""Alice's team (Acme) with one of every team-owned object, each carrying a marker text
that must never show up in an answer to another team."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Model
from django.forms.models import model_to_dict

from apps.accounts.models import ApiToken, Invitation, Membership
from apps.accounts.services import api_token_create, invitation_create
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.benchmarks.models import BenchmarkPlan, JobAttempt, JobLog, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.decisions.models import DecisionRecord, RetestTrigger
from apps.evidence.models import EvidenceRun
from apps.runners.models import EnrollmentToken, Runner
from apps.runners.services import enrollment_token_create
from apps.selections import services as selection_services
from apps.selections.models import Selection, WorkloadTrace
from tests.benchmarks.factories import RunnerClient, enrolled_runner, result_document
from tests.decisions.factories import accepted, decision_catalog, two_candidate_selection

MARKERS = {
    "selection": "alice-selection-7f31",
    "trace": "alice-trace-7f31.csv",
    "plan": "alice-plan-7f31",
    "runner": "alice-runner-7f31",
    "log": "alice-log-line-7f31",
    "token": "alice-token-7f31",
    "decision": "alice-decision-7f31",
    "trigger": "alice-trigger-reason-7f31",
    "invitation": "alice-invitee-7f31@example.org",
}
TRACE_CSV = b"timestamp,input_tokens,output_tokens\n0,100,10\n2,200,20\n4,300,30\n"


@dataclass(frozen=True)
class AliceWorld:
    """Every object of Acme the isolation walk aims at, plus the catalog rows it reads."""

    objects: dict[str, Model]
    catalog: dict[str, Any]
    runner_credential: str

    def catalog_ids(self) -> dict[str, str]:
        """The URL value (pk, slug or key) of each catalog row a URL can name."""
        rows = self.catalog
        values = {
            "release": rows["release"].pk,
            "cell": rows["cell"].pk,
            "engine": rows["release"].engine.slug,
            "backend": rows["backend"].slug,
            "accelerator": rows["h100"].slug,
            "model": rows["model"].slug,
            "feature": rows["cell"].feature.key,
        }
        return {name: str(value) for name, value in values.items()}

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every field of every object (and catalog row) as stored now, to prove that nothing
        was changed."""
        state = {}
        catalog = {f"catalog:{name}": row for name, row in self.catalog.items()}
        for name, obj in {**self.objects, **catalog}.items():
            row = type(obj).objects.filter(pk=obj.pk).first()
            state[name] = model_to_dict(row) if row is not None else {"deleted": True}
            if row is not None:
                state[name]["_timestamps"] = [
                    getattr(row, field.attname)
                    for field in row._meta.concrete_fields
                    if field.get_internal_type() == "DateTimeField"
                ]
        return state


def build_alice_world(*, alice: Any, bob_approver: Any, acme: Any) -> AliceWorld:
    rows = decision_catalog()
    selection = two_candidate_selection(acme, alice, rows)
    Selection.objects.filter(pk=selection.pk).update(title=MARKERS["selection"])
    selection_services.trace_upload(
        actor_user=alice, selection=selection, name=MARKERS["trace"], content=TRACE_CSV, apply=False
    )
    runner, credential = enrolled_runner(alice, acme, name=MARKERS["runner"])
    options = PlanOptions(run_mode="simulated", request_count=4, load_points=({"rate_rps": 1.0},))
    plan = plan_create(
        actor_user=alice,
        team=acme,
        selection_id=selection.pk,
        options=options,
        title=MARKERS["plan"],
    )
    attempt = JobAttempt.objects.filter(job__plan=plan).order_by("pk").first()
    _run_attempt(RunnerClient(credential), attempt.pk)
    record = accepted(alice, bob_approver, acme, selection, simulation_only=True)
    DecisionRecord.objects.filter(pk=record.pk).update(title=MARKERS["decision"])
    trigger = RetestTrigger.objects.create(
        record=record, kind="engine_major", key="isolation", reason=MARKERS["trigger"]
    )
    enrollment_token_create(actor_user=alice, team=acme)
    api_token_create(actor=Actor.for_user(alice), user=alice, team=acme, name=MARKERS["token"])
    invitation, _ = invitation_create(
        actor_user=alice, team=acme, invitee=MARKERS["invitation"], role="viewer"
    )
    objects: dict[str, Model] = {
        "selection": selection,
        "candidate": selection.candidates.order_by("rank").first(),
        "trace": WorkloadTrace.objects.get(selection=selection),
        "plan": BenchmarkPlan.objects.get(pk=plan.pk),
        "job": attempt.job,
        "attempt": attempt,
        "log": JobLog.objects.get(attempt=attempt),
        "upload": ResultUpload.objects.get(attempt=attempt),
        "evidence_run": EvidenceRun.objects.get(attempt=attempt),
        "record": record,
        "trigger": trigger,
        "runner": Runner.objects.get(pk=runner.pk),
        "enrollment_token": EnrollmentToken.objects.filter(team=acme).latest("pk"),
        "api_token": ApiToken.objects.get(user=alice),
        "membership": Membership.objects.get(user=alice, team=acme),
        "invitation": Invitation.objects.get(pk=invitation.pk),
        "audit_event": AuditEvent.objects.filter(team=acme).latest("pk"),
    }
    return AliceWorld(objects=objects, catalog=rows, runner_credential=credential)


def _run_attempt(api: RunnerClient, attempt_id: int) -> None:
    """Claim, log and upload one load point as alice's runner does, leaving it running."""
    steps = [
        api.post(f"attempts/{attempt_id}/claim"),
        api.post(f"attempts/{attempt_id}/log", {"offset": 0, "text": MARKERS["log"]}),
        api.upload(attempt_id, result_document(0), key=f"a{attempt_id}-lp0-c0"),
    ]
    for response in steps:
        assert response.status_code in (200, 201), response.content
