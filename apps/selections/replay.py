"""Trace replay: a workload whose arrival names an uploaded trace, made whole for the cores.

A selection stores `{"process": "trace", "trace": <id>, "speedup": s}`; the simulator and the
benchmark schedule take plain documents (workload.py imports no Django), so the trace's
timestamps and lengths are read here, always through the owning team.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackselect_domain.workload import WorkloadError, trace_summary

from apps.selections import selectors


def replays_trace(workload: Mapping[str, Any]) -> bool:
    arrival = workload.get("arrival") or {}
    return arrival.get("process") == "trace" and "trace" in arrival


def resolved_workload(workload: Mapping[str, Any], *, team: Any) -> dict[str, Any]:
    """The workload with a trace reference replaced by the trace's own arrivals and lengths.

    Raises WorkloadError naming `arrival.trace` when the team has no such trace.
    """
    if not replays_trace(workload):
        return dict(workload)
    arrival = workload["arrival"]
    trace = selectors.team_trace(team=team, trace_id=arrival["trace"], with_rows=True)
    if trace is None:
        raise WorkloadError(f"arrival.trace: your team has no trace {arrival['trace']}")
    replay = trace_summary(trace.rows).replay_document(speedup=arrival.get("speedup", 1.0))
    peak = {"peak_factor": arrival["peak_factor"]} if arrival.get("peak_factor") else {}
    return {**workload, **replay, "arrival": {**replay["arrival"], **peak}}
