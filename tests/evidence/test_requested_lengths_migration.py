"""Stored runner results are judged again against their schedule's lengths by migration 0002."""

from __future__ import annotations

import importlib
from statistics import mean

from django.apps import apps

from apps.evidence.models import LoadPointResult
from tests.evidence.factories import answered, drawn_outputs_plan, measured_attempt

MIGRATION = importlib.import_module(
    "apps.evidence.migrations.0002_requested_lengths_from_the_schedule"
)


def test_a_result_stored_against_the_distributions_mean_is_judged_again_on_its_schedule(
    selection, candidates
):
    plan = drawn_outputs_plan(selection)
    measured_attempt(plan, candidates[0], answered(plan))
    result = LoadPointResult.objects.get(run__job__plan=plan)
    # as the code before it stored the result: the distribution's mean, and a false flag
    LoadPointResult.objects.filter(pk=result.pk).update(
        requested_osl=128.0, summary={**result.summary, "osl_off_target": True}
    )

    MIGRATION.forwards(apps, None)

    result.refresh_from_db()
    assert result.requested_osl == mean(r["output_tokens"] for r in plan.requests)
    assert (result.summary["isl_off_target"], result.summary["osl_off_target"]) == (False, False)
