from io import StringIO

import pytest
from django.core.management import call_command

from apps.catalog.models import Accelerator

pytestmark = pytest.mark.django_db


def _stats() -> str:
    out = StringIO()
    call_command("catalog_stats", stdout=out)
    return out.getvalue()


def test_catalog_stats_prints_counts_by_kind_and_full_source_coverage(catalog):
    output = _stats()
    assert "engines: 13" in output
    assert "Engines by kind: engine 7, kv_runtime 2, orchestrator 4" in output
    assert "cells with evidence URL and as_of: 282 of 282 (100.0%)" in output
    assert "accelerator figures:" in output
    assert output.count("(100.0%)") == 4


def test_catalog_stats_counts_a_figure_without_a_source_as_unsourced(catalog):
    accelerator = Accelerator.objects.get(slug="h100-sxm")
    accelerator.sources.pop("tdp_w")
    accelerator.save()
    sourced_total = sum(len(a.sources) for a in Accelerator.objects.all())
    output = _stats()
    assert f"accelerator figures: {sourced_total} of {sourced_total + 1}" in output
    assert "cells with evidence URL and as_of: 282 of 282 (100.0%)" in output
