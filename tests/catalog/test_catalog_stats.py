from io import StringIO

import pytest
from django.core.management import call_command

from apps.catalog.models import Accelerator, Capability, Feature

pytestmark = pytest.mark.django_db


def _stats() -> str:
    out = StringIO()
    call_command("catalog_stats", stdout=out)
    return out.getvalue()


def test_catalog_stats_prints_counts_by_kind_and_full_source_coverage(catalog):
    output = _stats()
    assert "engines: 13" in output
    assert "Engines by kind: engine 7, kv_runtime 2, orchestrator 4" in output
    assert "cells with evidence URL and as_of: 291 of 291 (100.0%)" in output
    assert "accelerator figures:" in output
    sources = output.split("Sources (")[1].split("Coverage of")[0]
    assert sources.count("(100.0%)") == 4


def test_catalog_stats_prints_feature_coverage_per_serving_engine(catalog):
    output = _stats()
    coverage = output.split("Coverage of serving engines")[1]
    assert coverage.count(": features with a cell:") == 7
    assert "Dynamo" not in coverage
    line = next(
        row for row in coverage.splitlines() if row.strip().startswith("LMDeploy 0.18.0: features")
    )
    cells = Capability.objects.filter(release__engine__slug="lmdeploy")
    decided = cells.values("feature").distinct().count()
    assert f"{decided} of {Feature.objects.count()}" in line


def test_catalog_stats_counts_a_figure_without_a_source_as_unsourced(catalog):
    accelerator = Accelerator.objects.get(slug="h100-sxm")
    accelerator.sources.pop("tdp_w")
    accelerator.save()
    sourced_total = sum(len(a.sources) for a in Accelerator.objects.all())
    output = _stats()
    assert f"accelerator figures: {sourced_total} of {sourced_total + 1}" in output
    assert "cells with evidence URL and as_of: 291 of 291 (100.0%)" in output
