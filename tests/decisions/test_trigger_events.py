"""Each retest trigger kind fires from a real change made through the owning app's service,
both through the hook that service calls on commit and through the periodic sweep alone (in a
test transaction nothing commits, so the hooks stay silent unless a test runs them)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.catalog.models import EngineRelease, KernelBackend, ReleaseBackend
from apps.catalog.services import entry_create, entry_update
from apps.decisions.choices import TriggerKind
from apps.decisions.services import record_deprecate
from apps.decisions.tasks import sweep
from apps.decisions.triggers import RUNNER_TASK
from apps.runners.services import runner_probe
from apps.selections.services import trace_upload
from tests.benchmarks.factories import enrolled_runner, simulated_probe
from tests.decisions.factories import accepted

CURATOR = Actor.system("curator")


def trace_csv(*, input_tokens: int, output_tokens: int, gap_s: float, rows: int = 200) -> bytes:
    lines = ["timestamp,input_tokens,output_tokens"]
    lines += [f"{i * gap_s:.3f},{input_tokens},{output_tokens}" for i in range(rows)]
    return "\n".join(lines).encode()


@pytest.fixture
def runner(alice, acme, rows):
    runner, _ = enrolled_runner(alice, acme, name="h100-box")
    return runner


@pytest.fixture
def record(acme, alice, approver_bob, selection, runner):
    return accepted(alice, approver_bob, acme, selection)


def change_model_checkpoint(ctx: dict) -> None:
    entry_update(
        actor=CURATOR,
        instance=ctx["rows"]["model"],
        changes={"checkpoint": "meta-llama/Llama-3.1-8B-Instruct-rev2"},
    )


def release_next_major(ctx: dict) -> None:
    entry_create(
        actor=CURATOR,
        model=EngineRelease,
        values={"engine": ctx["rows"]["release"].engine, "version": "1.0.0"},
    )


def add_kernel_backend(ctx: dict) -> None:
    backend = entry_create(
        actor=CURATOR, model=KernelBackend, values={"slug": "flashinfer", "name": "FlashInfer"}
    )
    entry_create(
        actor=CURATOR,
        model=ReleaseBackend,
        values={"release": ctx["rows"]["release"], "backend": backend, "vendors": ["nvidia"]},
    )


def lower_feature_maturity(ctx: dict) -> None:
    entry_update(
        actor=CURATOR,
        instance=ctx["rows"]["cell"],
        changes={"maturity": "experimental", "as_of": date(2026, 3, 1)},
    )


def probe_new_driver(ctx: dict) -> None:
    probe = {**simulated_probe(), "driver_version": "550.54.15", "cuda_version": "12.4"}
    runner_probe(runner=ctx["runner"], probe=probe)


def upload_longer_faster_trace(ctx: dict) -> None:
    trace_upload(
        actor_user=ctx["alice"],
        selection=ctx["selection"],
        name="production.csv",
        content=trace_csv(input_tokens=2000, output_tokens=400, gap_s=0.1),
    )


EVENTS = [
    (change_model_checkpoint, TriggerKind.MODEL),
    (release_next_major, TriggerKind.ENGINE_MAJOR),
    (add_kernel_backend, TriggerKind.KERNEL_BACKEND),
    (lower_feature_maturity, TriggerKind.MATURITY),
    (probe_new_driver, TriggerKind.GPU),
    (upload_longer_faster_trace, TriggerKind.WORKLOAD_DRIFT),
]


@pytest.fixture
def ctx(rows, runner, alice, selection, record):
    return {"rows": rows, "runner": runner, "alice": alice, "selection": selection}


@pytest.mark.parametrize(("event", "kind"), EVENTS, ids=[kind for _, kind in EVENTS])
def test_an_event_hook_fires_exactly_its_trigger(
    event, kind, ctx, record, sent_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        event(ctx)
    assert sent_tasks, "the hook sent no task"
    assert list(record.triggers.values_list("kind", flat=True)) == [kind]
    record.refresh_from_db()
    assert record.retest_needed


def test_the_age_trigger_fires_once_the_revalidation_period_is_over(record):
    accepted_at = record.decided_at
    sweep(now=accepted_at + timedelta(days=89))
    assert not record.triggers.exists()
    sweep(now=accepted_at + timedelta(days=90))
    assert list(record.triggers.values_list("kind", flat=True)) == [TriggerKind.AGE]


def test_the_sweep_alone_finds_every_kind_from_the_database(ctx, record):
    for event, _ in EVENTS:
        event(ctx)
    assert not record.triggers.exists()
    sweep(now=record.decided_at + timedelta(days=365))
    assert set(record.triggers.values_list("kind", flat=True)) == set(TriggerKind.values)


def test_the_sweep_run_twice_fires_once(ctx, record):
    lower_feature_maturity(ctx)
    first, second = sweep(), sweep()
    assert (first["fired"], second["fired"]) == (1, 0)
    assert record.triggers.count() == 1
    fired_events = AuditEvent.objects.filter(action="decision.retest_trigger")
    assert fired_events.count() == 1


def test_a_hook_and_the_sweep_together_fire_once(
    ctx, record, sent_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        probe_new_driver(ctx)
    assert sweep()["fired"] == 0
    assert record.triggers.count() == 1


def test_a_hook_sends_its_task_only_after_the_commit(
    ctx, record, sent_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        probe_new_driver(ctx)
    assert sent_tasks == []
    for callback in callbacks:
        callback()
    assert [name for name, _ in sent_tasks] == [RUNNER_TASK]


def test_a_trace_like_the_goal_does_not_fire(ctx, record, alice, selection):
    trace_upload(
        actor_user=alice,
        selection=selection,
        name="same.csv",
        content=trace_csv(input_tokens=512, output_tokens=128, gap_s=0.5),
    )
    assert sweep()["fired"] == 0


def test_a_fired_trigger_says_why_in_the_audit_trail(ctx, record):
    probe_new_driver(ctx)
    sweep()
    event = AuditEvent.objects.get(action="decision.retest_trigger")
    assert event.object_id == str(record.pk)
    assert "driver_version=550.54.15" in event.message
    assert event.after["kind"] == TriggerKind.GPU


def test_a_record_that_is_not_accepted_is_not_watched(ctx, record, acme, approver_bob):
    record_deprecate(actor_user=approver_bob, team=acme, record_id=record.pk, reason="Retired.")
    lower_feature_maturity(ctx)
    assert sweep() == {"evaluated": 0, "fired": 0}
