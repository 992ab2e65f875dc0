"""The nearest published measurements to a stack and goal, for the estimate API and the
candidate pages: reads only, through apps.catalog.selectors.nearest_published_many.

Published rows are other people's measurements (evidence of kind `published`), shown beside
the team's predictions and runs, never as the team's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from stackselect_domain.slo import request_ms, requests_in_flight
from stackselect_domain.workload import parse_length

from apps.catalog.selectors import PublishedGoal, nearest_published_many
from apps.selections.estimator import Parallelism
from apps.selections.models import Candidate, Selection


def none_note(model_slug: str | None) -> str:
    if model_slug is None:
        return "a custom architecture has no published measurements in the catalog"
    return f"the catalog holds no published measurement of {model_slug}"


def estimate_published(
    *,
    model: str,
    accelerator: str,
    engine: str,
    engine_version: str,
    precision: str,
    layout: Parallelism,
    isl: int,
    osl: int,
    concurrency: int | None,
    rate_rps: float | None,
    e2e_ms: float | None,
    prefix_share: float = 0.0,
    prefix_tokens: int = 0,
) -> dict[str, Any]:
    """The estimate's `published` rows and, when there are none, the note saying why; a rate
    is weighed as the requests it keeps in flight for `e2e_ms` each (the answer's own time)."""
    stack = {
        "accelerator": accelerator,
        "engine": engine,
        "engine_version": engine_version,
        "precision": precision,
        **asdict(layout),
    }
    terms = {
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "rate_rps": rate_rps,
        "predicted_in_flight": _predicted_in_flight(rate_rps, e2e_ms),
        "prefix_share": prefix_share,
        "prefix_tokens": prefix_tokens,
    }
    rows = nearest_published_many([_stack_goal(model, stack, terms)])[0]
    return {"published": rows, "published_note": None if rows else none_note(model)}


def _workload_terms(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The goal's mean lengths (rounded up, as the candidate computation reads them), its
    load (a closed loop's concurrency or an open loop's rate; a replayed trace states none) and
    its shared prefix."""
    arrival = workload.get("arrival") or {}
    rate = arrival.get("rate_rps")
    return {
        "isl": math.ceil(parse_length(workload["isl"], "isl").mean()),
        "osl": math.ceil(parse_length(workload["osl"], "osl").mean()),
        "concurrency": arrival.get("concurrency"),
        "rate_rps": None if arrival.get("concurrency") else rate,
        "prefix_share": float(workload.get("prefix_share") or 0),
        "prefix_tokens": int(workload.get("prefix_tokens") or 0),
    }


def _predicted_in_flight(rate_rps: float | None, e2e_ms: float | None) -> int | None:
    """Requests an open loop keeps in flight at `e2e_ms` each (Little's law)."""
    if not rate_rps or not e2e_ms:
        return None
    return requests_in_flight(rate_rps, e2e_ms / 1e3)


def _predicted_e2e_ms(candidate: Candidate, osl: int) -> float | None:
    """The candidate's predicted time in the system: its analytic TTFT plus TPOT for every
    further token (the figures the row itself shows, with their method)."""
    latency = (candidate.estimate or {}).get("latency") or {}
    if latency.get("ttft_ms") is None or latency.get("tpot_ms") is None:
        return None
    return request_ms(latency["ttft_ms"], latency["tpot_ms"], osl)


def _stack_goal(
    model_slug: str, stack: Mapping[str, Any], terms: Mapping[str, Any]
) -> PublishedGoal:
    """A goal from a stack in Candidate.stack's terms (slugs, version, precision, degrees)."""
    return PublishedGoal(
        model_slug=model_slug,
        accelerator_slug=stack["accelerator"],
        engine_slug=stack.get("engine") or None,
        engine_version=stack.get("engine_version") or None,
        precision=stack.get("precision") or None,
        tp=stack.get("tp"),
        ep=stack.get("ep"),
        pp=stack.get("pp"),
        dp=stack.get("dp"),
        **terms,
    )


def published_for(
    *, selection: Selection, candidates: Iterable[Candidate]
) -> dict[int, list[dict[str, Any]]]:
    """{candidate id: its nearest published rows}, in one query for the whole page."""
    candidates = list(candidates)
    if selection.model is None or not candidates:
        return {candidate.pk: [] for candidate in candidates}
    terms = _workload_terms(selection.workload)
    goals = [
        _stack_goal(
            selection.model.slug,
            c.stack,
            {
                **terms,
                "predicted_in_flight": _predicted_in_flight(
                    terms["rate_rps"], _predicted_e2e_ms(c, terms["osl"])
                ),
            },
        )
        for c in candidates
    ]
    answers = nearest_published_many(goals)
    return {candidate.pk: rows for candidate, rows in zip(candidates, answers, strict=True)}
