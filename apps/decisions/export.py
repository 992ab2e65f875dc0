"""A record as Markdown with YAML front matter: the file a team keeps beside its code.

Built only from the record's stored parts, so the export of a frozen record never changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from stackselect_domain.slo import SLO

from apps.core.templatetags.facts import signed_percent
from apps.decisions.choices import TriggerKind
from apps.decisions.comparison_text import comparison_lines
from apps.decisions.drift import KS_ALPHA, KS_MIN_STATISTIC, RATE_CHANGE_LIMIT
from apps.decisions.evidence_kind import EvidenceKind, entry_kind
from apps.decisions.models import DecisionRecord
from apps.selections.operating_point import in_flight
from apps.selections.templatetags.bands import OUTSIDE_BAND, simulated_share_words
from apps.selections.workload_words import arrival_text, length_text, precision_text, sharing_text


def username_of(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def deciders(record: DecisionRecord) -> list[str]:
    """Author, proposer and approver, each once, in that order."""
    names = [username_of(record.created_by), username_of(record.proposed_by)]
    names.append(username_of(record.decided_by))
    return list(dict.fromkeys(name for name in names if name))


def _yaml(value: Any) -> str:
    """JSON scalars and flow lists are valid YAML, and quoting every string keeps it so."""
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


def front_matter(record: DecisionRecord) -> str:
    date = record.decided_at or record.created_at
    fields = {
        "id": record.reference,
        "title": record.display_title,
        "status": record.status,
        "evidence": record.evidence_kind,
        "simulation_only": record.simulation_only,
        "date": date.date().isoformat() if date else None,
        "deciders": deciders(record),
        "supersedes": record.supersedes.reference if record.supersedes else None,
        "superseded_by": record.superseded_by.reference if record.superseded_by else None,
        "team": record.team.slug,
        "retest_needed": record.retest_needed,
    }
    return "\n".join(["---", *(f"{key}: {_yaml(value)}" for key, value in fields.items()), "---"])


def _list(values: Iterable[Any]) -> str:
    items = [str(value) for value in values]
    return ", ".join(items) if items else "none"


def goal_lines(goal: Mapping[str, Any]) -> list[str]:
    workload, slo = goal["workload"], goal["slo"]
    capacity, operational = goal["capacity"], goal["operational"]
    features = [
        f"{item['feature']} ≥ {item.get('min_maturity') or 'any'}"
        for item in operational["required_features"]
    ]
    return [
        f"- Selection: {goal['selection_title']} (#{goal['selection_id']})",
        f"- Model: {goal['model']['name']} (`{goal['model']['checkpoint']}`)",
        f"- Input length: {length_text(workload['isl'])}",
        f"- Output length: {length_text(workload['osl'])}",
        f"- Arrival: {arrival_text(workload['arrival'])}",
        f"- Sharing: {sharing_text(workload)}",
        f"- Precision: {precision_text(workload)}",
        f"- SLO: {SLO.from_dict(slo).describe()}",
        f"- Capacity: accelerators {_list(capacity['accelerators'])}, "
        f"at most {capacity['max_gpus']} GPUs",
        f"- Operational needs: {_list(operational['needs'])}",
        f"- Required features: {_list(features)}",
    ]


def stack_text(stack: Mapping[str, Any]) -> str:
    engine = f"{stack['engine']} {stack['engine_version']}"
    backend = f" / {stack['backend']}" if stack.get("backend") else ""
    layout = " ".join(f"{name}{stack.get(name, 1)}" for name in ("tp", "pp", "ep", "dp"))
    return (
        f"{engine}{backend} · {stack['gpu_count']}x {stack['accelerator']} · {layout} · "
        f"{stack['precision']}"
    )


def candidate_lines(candidates: list[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| Key | Stack | Release | Catalog cells | Predicted (before any run) |",
        "|---|---|---|---|---|",
    ]
    for entry in candidates:
        cells = ", ".join(
            f"{cell['feature']}={cell['maturity']} (#{cell['id']}, {cell['as_of']})"
            for cell in entry["capabilities"]
        )
        release = entry["release"]
        lines.append(
            f"| {entry['key']} | {stack_text(entry['stack'])} | "
            f"{release['engine']} {release['version']} (#{release['id']}) | {cells or 'none'} | "
            f"{estimate_text(entry.get('estimate') or {})} |"
        )
    return lines


def estimate_text(estimate: Mapping[str, Any]) -> str:
    """A candidate's predicted figures, each with the method that made it and the error band
    measured for that method; a figure the record does not hold is left out, never shown as 0."""
    unknown = "method not recorded"
    goodput_method = estimate.get("goodput_method") or unknown
    parts = []
    if estimate.get("goodput_per_gpu_rps") is not None:
        parts.append(f"{estimate['goodput_per_gpu_rps']:.3g} req/s per GPU ({goodput_method})")
    for key, what in (("gpus_for_peak", "the peak rate"), ("gpus_for_clients", "the clients")):
        if estimate.get(key):
            parts.append(f"{estimate[key]} GPUs for {what} ({goodput_method})")
    if estimate.get("ttft_ms") is not None and estimate.get("tpot_ms") is not None:
        at = estimate.get("latency_in_flight")
        point = f" at {in_flight(at, estimate.get('replicas') or 1)}" if at else ""
        parts.append(
            f"TTFT {estimate['ttft_ms']:.4g} ms, TPOT {estimate['tpot_ms']:.3g} ms{point} "
            f"({estimate.get('latency_method') or unknown})"
        )
    if bands := latency_bands_text(estimate.get("error_band") or {}):
        parts.append(bands)
    if share := estimate.get("simulated_share"):
        parts.append(f"analytic, which queues nothing: {simulated_share_words(share)}")
    return "; ".join(parts) or "no prediction"


def latency_bands_text(bands: Mapping[str, Any]) -> str:
    """The TTFT and TPOT bands as the candidate page words them: how many held-out rows measured
    them, and a warning where those rows are not of this stack's engine or GPU vendor."""
    records = [
        (name, record)
        for metric, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"))
        if (record := bands.get(metric) or {}).get("band")
    ]
    if not records:
        return ""
    ranges = ", ".join(
        f"{name} {signed_percent(r['band']['p10'])} to {signed_percent(r['band']['p90'])}"
        for name, r in records
    )
    rows = next((r["rows"] for _, r in records if r.get("rows")), None)
    over = f"over {rows} held-out published rows" if rows else "held out"
    text = f"error band (10th to 90th percentile {over}) {ranges}"
    outside = next((r for _, r in records if r.get("covers_stack") is False), None)
    if outside is None:
        return text
    scope = outside.get("measured_for") or {}
    measured = (
        f", on {', '.join(scope['engines'])} with {', '.join(scope['vendors'])} GPUs"
        if scope.get("engines") and scope.get("vendors")
        else ""
    )
    return f"{text}, {OUTSIDE_BAND}{measured}"


def _figure(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def failed_text(point: Mapping[str, Any]) -> str:
    """How many of a load point's requests failed: its latency percentiles describe the rest
    ("-" in records written before the count of requests was kept)."""
    errors, requests = point.get("errors"), point.get("requests")
    return "-" if errors is None or requests is None else f"{errors:,} of {requests:,}"


def load_point_text(point: Mapping[str, Any]) -> str:
    if point.get("rate_rps") is not None:
        return f"{point['rate_rps']:g} req/s"
    return f"{point.get('concurrency')} in flight"


EVIDENCE_WARNINGS = {
    EvidenceKind.SIMULATED: "The evidence is simulated only: these runs were dry runs on the "
    "simulated engine, whose timings come from the estimator. No real engine ran.",
    EvidenceKind.MIXED: "Part of the evidence is simulated: runs marked simulated were dry runs "
    "on the simulated engine, not measurements.",
    EvidenceKind.IMPORTED: "The evidence was imported from other benchmark tools; no StackSelect "
    "runner measured it.",
    EvidenceKind.NONE: "There is no evidence: nothing was measured.",
}


def evidence_banner(record: DecisionRecord) -> list[str]:
    """A quoted warning under the title when the evidence is not a measurement."""
    warning = EVIDENCE_WARNINGS.get(record.evidence_kind)
    return [f"> **Evidence: {record.evidence_kind}.** {warning}", ""] if warning else []


def evidence_lines(evidence: list[Mapping[str, Any]]) -> list[str]:
    if not evidence:
        return ["No evidence was recorded."]
    lines = []
    for run in evidence:
        runner = (
            run["runner"]["name"]
            if run.get("runner")
            else f"imported from {run['tool']}"
            if run["source"] == "import"
            else "runner not recorded"
        )
        lines += [
            f"### Run {run['run_id']} of candidate {run['candidate_key']} "
            f"({run['tool']} {run['tool_version']})".rstrip(),
            "",
            f"- Identity fingerprint: `{run['identity_fingerprint']}`",
            f"- Evidence: {entry_kind(run)}",
            f"- Produced by: {runner}",
            *(
                f"- Raw file {item.get('name', '')}: sha256 `{item['sha256']}`"
                for item in run["raw_checksums"]
            ),
            "",
            "| Load point | Failed | Throughput (req/s) | Goodput (req/s) | TTFT p99 (ms) "
            "| TPOT p99 (ms) |",
            "|---|---|---|---|---|---|",
            *(
                f"| {load_point_text(point['load_point'])} | {failed_text(point)} | "
                f"{_figure(point.get('request_throughput_rps'))} | "
                f"{_figure(point.get('goodput_rps'))} | {_figure(point.get('ttft_p99_ms'))} | "
                f"{_figure(point.get('tpot_p99_ms'))} |"
                for point in run["load_points"]
            ),
        ]
        if run["predicted_vs_measured"]:
            lines += ["", "| Metric | Predicted | Measured | Measured / predicted |"]
            lines += ["|---|---|---|---|"]
            lines += [
                f"| {row['metric']} | {_figure(row['predicted'])} | {_figure(row['measured'])} | "
                f"{_figure(row['ratio'])} |"
                for row in run["predicted_vs_measured"]
            ]
        lines.append("")
    return lines[:-1]


def trigger_lines(record: DecisionRecord) -> list[str]:
    watched = [TriggerKind(kind).label for kind in record.retest_kinds]
    lines = [
        f"- Watched: {_list(watched)}.",
        f"- Revalidate after {record.revalidate_after_days} days.",
        f"- Workload drift: two-sample KS test on input and output lengths (alpha {KS_ALPHA:g}, "
        f"statistic at least {KS_MIN_STATISTIC:g}) or a rate change over "
        f"{RATE_CHANGE_LIMIT:.0%}.",
    ]
    fired = list(record.triggers.order_by("fired_at", "pk"))
    lines += [
        f"- Fired {trigger.fired_at.date().isoformat()}: {trigger.get_kind_display()}: "
        f"{trigger.reason}"
        for trigger in fired
    ]
    return lines


def decision_lines(record: DecisionRecord) -> list[str]:
    chosen = record.candidate(record.chosen_key)
    chosen_text = f"{chosen['key']}: {stack_text(chosen['stack'])}" if chosen else "not chosen yet"
    dropped = [
        f"- {entry['key']} ({stack_text(entry['stack'])}): {record.dropped.get(entry['key'], '')}"
        for entry in record.candidates
        if entry["key"] != record.chosen_key
    ]
    return [
        f"**Chosen:** {chosen_text}",
        "",
        record.rationale or "_No rationale yet._",
        "",
        "### Why the others were dropped",
        "",
        *(dropped or ["No other candidates."]),
        "",
        "### Known risks",
        "",
        record.risks or "None recorded.",
        "",
        "### Retest triggers",
        "",
        *trigger_lines(record),
    ]


def comparison_block(comparison: Mapping[str, Any]) -> list[str]:
    lines = comparison_lines(comparison)
    return [*lines, ""] if lines else []


def record_markdown(record: DecisionRecord) -> str:
    parts = [
        front_matter(record),
        "",
        f"# {record.reference}: {record.display_title}",
        "",
        *evidence_banner(record),
        "## 1. Goal",
        "",
        *goal_lines(record.goal),
        "",
        "## 2. Candidates",
        "",
        *candidate_lines(record.candidates),
        "",
        "## 3. Evidence",
        "",
        *evidence_lines(record.evidence),
        "",
        *comparison_block(record.comparison),
        "## 4. Decision",
        "",
        *decision_lines(record),
    ]
    return "\n".join(parts) + "\n"
