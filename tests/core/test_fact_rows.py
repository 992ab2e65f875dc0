"""A document's table rows name each value by the path the API and its errors use."""

from __future__ import annotations

import pytest

from apps.benchmarks.plan_identity import PlanOptionError, normalise_load_points
from apps.core.templatetags.facts import fact_rows


def test_a_list_of_objects_is_numbered_from_zero_as_the_plans_field_errors_are() -> None:
    rows = fact_rows({"load_points": [{"rate_rps": 2}, {"rate_rps": None}], "tags": ["a", "b"]})

    assert rows == [
        ("load_points[0].rate_rps", "2"),
        ("load_points[1].rate_rps", "—"),
        ("tags", "a, b"),
    ]
    with pytest.raises(PlanOptionError, match=r"^load_points\[1\]: "):
        normalise_load_points([{"rate_rps": 2}, {"rate_rps": 1, "concurrency": 4}])
