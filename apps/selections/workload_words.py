"""A goal's workload worded once, for the selection page and the decision record alike."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stackselect_domain.words import grouped


def length_text(spec: Mapping[str, Any]) -> str:
    """A length distribution in words: its kind and the figures that set it."""
    kind = spec.get("kind")
    if kind == "fixed":
        return f"{grouped(spec['value'])} tokens"
    if kind == "normal":
        return f"normal, mean {grouped(spec['mean'])}, std {grouped(spec['std'])} tokens"
    if kind == "lognormal":
        return f"lognormal, median {grouped(spec['median'])} tokens, sigma {spec['sigma']:g}"
    if kind == "empirical":
        values = spec["values"]
        mean = sum(values) / len(values)
        return f"empirical, {grouped(len(values))} values, mean {grouped(mean)} tokens"
    return json.dumps(spec, sort_keys=True)


def arrival_text(arrival: Mapping[str, Any]) -> str:
    """How requests arrive: a closed loop's clients, a trace replayed (whose own lengths then
    replace the goal's), or a rate with its burstiness and peak."""
    if "concurrency" in arrival:
        return f"closed loop, {arrival['concurrency']} in flight"
    if arrival.get("process") == "trace":
        return (
            f"replay of trace #{arrival.get('trace')} at {arrival.get('speedup', 1):g}x speed, "
            "with its own lengths"
        )
    text = f"{arrival.get('process', 'poisson')}, {arrival.get('rate_rps', 0):g} req/s"
    if arrival.get("burstiness"):
        text += f", burstiness {arrival['burstiness']:g}"
    if arrival.get("peak_factor"):
        text += f", peak x{arrival['peak_factor']:g}"
    return text


def sharing_text(workload: Mapping[str, Any]) -> str:
    """What the goal's requests share and carry besides their lengths: the shared prompt prefix
    (its predictions read it from an engine's prefix cache), tool or structured-output requests
    and multi-turn conversations; "no shared prefix" when nothing is stated."""
    share = float(workload.get("prefix_share") or 0)
    parts = [
        f"{share:.0%} of prompts open with a shared "
        f"{grouped(int(workload.get('prefix_tokens') or 0))}-token prefix"
        if share > 0
        else "no shared prefix"
    ]
    if tool_share := float(workload.get("tool_share") or 0):
        parts.append(f"{tool_share:.0%} tool-call or structured-output requests")
    if workload.get("multi_turn"):
        parts.append("multi-turn conversations")
    return "; ".join(parts)


def precisions(workload: Mapping[str, Any]) -> list[str]:
    """The precisions the goal allows: one word or a list of them in the document."""
    precision = workload.get("precision") or []
    return [precision] if isinstance(precision, str) else [str(word) for word in precision]


def precision_text(workload: Mapping[str, Any]) -> str:
    """The precisions the goal allows and, when it sets one, its KV cache's data type (it
    halves or doubles what the cache holds)."""
    text = ", ".join(precisions(workload)) or "none"
    return f"{text}; KV cache {workload['kv_dtype']}" if workload.get("kv_dtype") else text
