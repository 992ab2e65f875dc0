import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from apps.audit.models import AuditEvent
from apps.core.errors import ConflictError
from apps.decisions import services
from apps.decisions.choices import DecisionStatus
from apps.decisions.export import record_markdown
from apps.selections.services import selection_update
from tests.decisions.factories import accepted, draft, text_for, two_candidate_selection


def test_records_are_numbered_per_team_from_one(acme, globex, alice, charlie, selection, rows):
    first, second = draft(alice, acme, selection), draft(alice, acme, selection)
    other = draft(charlie, globex, two_candidate_selection(globex, charlie, rows))
    assert [first.reference, second.reference, other.reference] == ["DR-1", "DR-2", "DR-1"]


def test_a_record_keeps_the_four_parts_it_was_written_with(acme, alice, selection):
    record = draft(alice, acme, selection)
    assert record.goal["slo"] == {"ttft_ms": 500, "tpot_ms": 50}
    assert [entry["key"] for entry in record.candidates] == ["A", "B"]
    assert record.candidates[0]["capabilities"][0]["maturity"] == "stable"
    assert record.chosen_key == "A"
    assert record.dropped == {"B": "B misses the TTFT target at the goal rate."}


def test_a_record_keeps_each_candidates_predicted_figures_and_gpus_with_their_method(
    acme, alice, selection
):
    selection.candidates.filter(rank=1).update(
        estimate={
            "goodput_per_gpu_rps": 1.5,
            "label": "roofline, simulated",
            "gpus_for_peak": 4,
            "latency": {"ttft_ms": 90.0, "tpot_ms": 12.0, "label": "roofline, analytic"},
        }
    )

    record = draft(alice, acme, selection)

    estimate = record.candidates[0]["estimate"]
    assert (estimate["gpus_for_peak"], estimate["goodput_method"]) == (4, "roofline, simulated")
    markdown = record_markdown(record)
    assert "1.5 req/s per GPU (roofline, simulated); 4 GPUs for the peak rate" in markdown
    assert "TTFT 90 ms, TPOT 12 ms (roofline, analytic)" in markdown


def test_the_author_cannot_approve_their_own_record(acme, alice, selection):
    record = draft(alice, acme, selection)
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    with pytest.raises(PermissionDenied, match="author"):
        services.record_accept(actor_user=alice, team=acme, record_id=record.pk)
    record.refresh_from_db()
    assert record.status == DecisionStatus.PROPOSED


def test_an_engineer_cannot_approve(acme, alice, bob, selection):
    record = draft(alice, acme, selection)
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    with pytest.raises(PermissionDenied, match="approver"):
        services.record_accept(actor_user=bob, team=acme, record_id=record.pk)


def test_an_approver_who_is_not_the_author_accepts(acme, alice, approver_bob, selection):
    record = accepted(alice, approver_bob, acme, selection)
    assert record.status == DecisionStatus.ACCEPTED
    assert record.decided_by == approver_bob


def test_a_draft_is_not_proposed_until_every_other_candidate_has_a_reason(acme, alice, selection):
    record = draft(alice, acme, selection, dropped={})
    with pytest.raises(ValidationError) as error:
        services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    assert "B" in error.value.message_dict["dropped"][0]


def test_an_accepted_record_refuses_edits(acme, alice, approver_bob, selection):
    record = accepted(alice, approver_bob, acme, selection)
    with pytest.raises(ConflictError, match="frozen"):
        services.record_update(
            actor_user=alice, team=acme, record_id=record.pk, text=text_for(selection, risks="x")
        )
    record.refresh_from_db()
    assert record.risks == "Prefix caching is new in this release."


def test_a_record_cannot_be_accepted_twice(acme, alice, approver_bob, selection):
    record = accepted(alice, approver_bob, acme, selection)
    with pytest.raises(ConflictError):
        services.record_accept(actor_user=approver_bob, team=acme, record_id=record.pk)


def test_superseding_links_both_ways(acme, alice, approver_bob, selection):
    older = accepted(alice, approver_bob, acme, selection)
    newer = services.record_supersede(actor_user=alice, team=acme, record_id=older.pk)
    assert newer.supersedes == older and newer.status == DecisionStatus.DRAFT
    older.refresh_from_db()
    assert older.status == DecisionStatus.ACCEPTED  # until the new one is accepted

    services.record_propose(actor_user=alice, team=acme, record_id=newer.pk)
    services.record_accept(actor_user=approver_bob, team=acme, record_id=newer.pk)
    older.refresh_from_db()
    newer.refresh_from_db()
    assert older.status == DecisionStatus.SUPERSEDED
    assert older.superseded_by == newer
    assert newer.supersedes == older
    assert list(older.successors.all()) == [newer]


def test_a_record_keeps_its_goal_after_the_selection_changes(acme, alice, selection):
    record = draft(alice, acme, selection)
    data = {
        "title": "changed",
        "workload": {**selection.workload, "model": "llama-3.1-8b"},
        "slo": {"ttft_ms": 100},
        "constraints": {},
    }
    selection_update(actor_user=alice, selection=selection, data=data)
    record.refresh_from_db()
    assert record.goal["slo"] == {"ttft_ms": 500, "tpot_ms": 50}


def test_every_change_of_a_record_is_audited(acme, alice, approver_bob, selection):
    record = draft(alice, acme, selection)
    services.record_update(
        actor_user=alice, team=acme, record_id=record.pk, text=text_for(selection, risks="More.")
    )
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    services.record_accept(actor_user=approver_bob, team=acme, record_id=record.pk)
    services.record_deprecate(
        actor_user=approver_bob, team=acme, record_id=record.pk, reason="Moved to a new model."
    )
    events = AuditEvent.objects.filter(object_type="decisions.decisionrecord").order_by("id")
    assert [(e.action, e.actor_name) for e in events] == [
        ("decision.create", "alice"),
        ("decision.update", "alice"),
        ("decision.propose", "alice"),
        ("decision.accept", "bob"),
        ("decision.deprecate", "bob"),
    ]


def test_a_rejection_needs_a_reason_and_records_who_rejected(acme, alice, approver_bob, selection):
    record = draft(alice, acme, selection)
    services.record_propose(actor_user=alice, team=acme, record_id=record.pk)
    with pytest.raises(ValidationError):
        services.record_reject(actor_user=approver_bob, team=acme, record_id=record.pk, reason=" ")
    rejected = services.record_reject(
        actor_user=approver_bob, team=acme, record_id=record.pk, reason="No evidence for B."
    )
    assert (rejected.status, rejected.decided_by, rejected.status_reason) == (
        DecisionStatus.REJECTED,
        approver_bob,
        "No evidence for B.",
    )
