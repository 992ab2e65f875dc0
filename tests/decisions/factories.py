"""Rows for the decisions tests: a selection with two chosen candidates, catalog cells they
used, measured evidence from a runner, and records at each status."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth import get_user_model

from apps.accounts.choices import Role
from apps.accounts.models import Membership
from apps.catalog.models import Capability, Feature, KernelBackend, ReleaseBackend
from apps.decisions import services
from apps.decisions.models import DecisionRecord
from apps.decisions.services import DecisionText
from apps.selections.models import Selection
from tests.benchmarks.factories import (
    catalog,
    enrolled_runner,
    result_document,
    selection_with_candidates,
)
from tests.evidence.factories import measured_attempt, plan_for

AS_OF = date(2026, 1, 15)
EVIDENCE_URL = "https://docs.example.org/prefix-caching"


def make_approver(user: Any, team: Any) -> Any:
    Membership.objects.filter(user=user, team=team).update(role=Role.APPROVER)
    return get_user_model().objects.get(pk=user.pk)


def decision_catalog() -> dict[str, Any]:
    """The fleet tests' catalog plus one feature cell and one kernel backend of the release."""
    rows = catalog()
    feature = Feature.objects.create(key="prefix_caching", name="Prefix caching", contract="kv")
    rows["cell"] = Capability.objects.create(
        release=rows["release"],
        feature=feature,
        maturity="stable",
        evidence_url=EVIDENCE_URL,
        as_of=AS_OF,
    )
    rows["backend"] = KernelBackend.objects.create(slug="flash-attn", name="FlashAttention")
    ReleaseBackend.objects.create(
        release=rows["release"], backend=rows["backend"], vendors=["nvidia"], is_default=True
    )
    return rows


def two_candidate_selection(team: Any, user: Any, rows: dict[str, Any]) -> Selection:
    """Candidates A (1x H100) and B (1x L40S), both chosen; A used the prefix-caching cell."""
    selection = selection_with_candidates(
        team, user, rows, layouts=[("h100-sxm", 1, "bf16"), ("l40s", 1, "bf16")]
    )
    selection.candidates.filter(accelerator=rows["h100"]).update(capability_ids=[rows["cell"].pk])
    return selection


def text_for(selection: Selection, **extra: Any) -> DecisionText:
    first, second = selection.candidates.order_by("rank")
    values = {
        "title": "Serve the chat assistant on vLLM",
        "chosen_candidate_id": first.pk,
        "rationale": "A meets the SLO with one GPU.",
        "dropped": {second.pk: "B misses the TTFT target at the goal rate."},
        "risks": "Prefix caching is new in this release.",
        "revalidate_after_days": 90,
        **extra,
    }
    return DecisionText(**values)


def draft(user: Any, team: Any, selection: Selection, **extra: Any) -> DecisionRecord:
    return services.record_create(
        actor_user=user, team=team, selection_id=selection.pk, text=text_for(selection, **extra)
    )


def accepted(
    author: Any, approver: Any, team: Any, selection: Selection, *, simulation_only: bool = False
) -> DecisionRecord:
    """Proposed and accepted; `simulation_only` for a record on a dry run's evidence."""
    record = draft(author, team, selection)
    services.record_propose(
        actor_user=author, team=team, record_id=record.pk, simulation_only=simulation_only
    )
    return services.record_accept(actor_user=approver, team=team, record_id=record.pk)


def measured_by_runner(admin: Any, team: Any, selection: Selection) -> Any:
    """Candidate A measured at one load point by an enrolled H100 runner."""
    runner, _ = enrolled_runner(admin, team, name="h100-box")
    plan = plan_for(selection, load_points=[{"rate_rps": 1.0}])
    records = result_document()["records"]
    candidate = selection.candidates.order_by("rank").first()
    attempt = measured_attempt(plan, candidate, records)
    attempt.runner = runner
    attempt.save(update_fields=["runner"])
    return runner
