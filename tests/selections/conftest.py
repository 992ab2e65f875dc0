"""Selections fixtures: the curated catalog and a goal document to vary per test."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.selections.catalog_fixture import load_catalog

GOAL: dict[str, Any] = {
    "title": "Chat assistant",
    "workload": {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "isl": {"kind": "fixed", "value": 1024},
        "osl": {"kind": "fixed", "value": 256},
        "arrival": {"process": "poisson", "rate_rps": 4},
        "prefix_share": 0.0,
        "prefix_tokens": 0,
        "multi_turn": False,
        "tool_share": 0.0,
        "max_context": 8192,
    },
    "slo": {"ttft_ms": 1000, "tpot_ms": 60, "e2e_ms": 30000, "percentile": 99, "attainment": 0.95},
    "constraints": {
        "accelerators": ["h100-sxm", "l4", "mi300x"],
        "max_gpus": 2,
        "required_features": [],
        "operational": ["openai_api"],
        "prices": {},
    },
}


@pytest.fixture
def catalog(db) -> None:
    load_catalog()


@pytest.fixture
def goal_payload() -> dict[str, Any]:
    return copy.deepcopy(GOAL)
