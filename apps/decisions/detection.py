"""Which retest triggers a change fires: the record's baseline against the current state.

No database: baseline.py reads both states in one shape, and this module only compares them.
Every finding carries a `key` naming the change itself, so a change fires once however often
it is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from stackselect_domain.canonical import canonical_hash, canonical_json

from apps.decisions.choices import TriggerKind
from apps.decisions.drift import WorkloadSample, workload_drift


@dataclass(frozen=True)
class Finding:
    kind: str
    key: str
    reason: str
    changed_field: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def short_hash(value: Any) -> str:
    return canonical_hash(value)[:16]


def major_version(version: str) -> str:
    return version.split(".", 1)[0]


def model_findings(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[Finding]:
    before, after = baseline.get("model"), current.get("model")
    if before is None or before == after:
        return []
    if after is None:
        return [
            Finding(
                TriggerKind.MODEL,
                "model:removed",
                f"The model {before['slug']} is no longer in the catalog.",
                "model",
            )
        ]
    return [
        Finding(
            TriggerKind.MODEL,
            f"checkpoint:{after['checkpoint']}",
            f"The model {after['slug']} now points at checkpoint {after['checkpoint']!r} "
            f"(was {before['checkpoint']!r}).",
            "model.checkpoint",
            {"before": before, "after": after},
        )
    ]


def gpu_findings(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[Finding]:
    """A runner of the chosen accelerator whose hardware, driver or CUDA/ROCm is new."""
    known = [canonical_json(env) for env in baseline.get("runners", {}).values()]
    findings = []
    for runner_id, environment in current.get("runners", {}).items():
        before = baseline.get("runners", {}).get(runner_id)
        if before == environment or (before is None and canonical_json(environment) in known):
            continue
        changed = sorted(
            name for name in environment if before is None or before.get(name) != environment[name]
        )
        what = "joined with" if before is None else "now reports"
        findings.append(
            Finding(
                TriggerKind.GPU,
                f"runner:{runner_id}:{short_hash(environment)}",
                f"Runner {runner_id} {what} {', '.join(changed)}: "
                + ", ".join(f"{name}={environment[name]}" for name in changed),
                "runner environment",
                {"runner_id": int(runner_id), "before": before, "after": environment},
            )
        )
    return findings


def engine_major_findings(
    baseline: Mapping[str, Any], current: Mapping[str, Any], chosen_version: str
) -> list[Finding]:
    chosen_major = major_version(chosen_version)
    known = baseline.get("releases", {})
    return [
        Finding(
            TriggerKind.ENGINE_MAJOR,
            f"release:{release_id}",
            f"{current['engine']} {version} is a new major release (the record chose "
            f"{chosen_version}).",
            "stack.engine_version",
            {"release_id": int(release_id), "version": version, "chosen": chosen_version},
        )
        for release_id, version in current.get("releases", {}).items()
        if release_id not in known and major_version(version) != chosen_major
    ]


def backend_findings(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[Finding]:
    before, after = baseline.get("backends", {}), current.get("backends", {})
    if before == after:
        return []
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    defaults = [
        sorted(name for name, is_default in rows.items() if is_default) for rows in (before, after)
    ]
    parts = [f"added {', '.join(added)}"] if added else []
    parts += [f"removed {', '.join(removed)}"] if removed else []
    if defaults[0] != defaults[1]:
        parts.append(f"default {', '.join(defaults[0]) or 'none'} -> {', '.join(defaults[1])}")
    return [
        Finding(
            TriggerKind.KERNEL_BACKEND,
            f"backends:{short_hash(after)}",
            "The chosen release's kernel backends changed: " + "; ".join(parts or ["flags"]) + ".",
            "stack.backend",
            {"before": before, "after": after},
        )
    ]


def maturity_findings(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[Finding]:
    findings = []
    for cell_id, maturity in sorted(baseline.get("cells", {}).items()):
        now = current.get("cells", {}).get(cell_id)
        if now == maturity:
            continue
        findings.append(
            Finding(
                TriggerKind.MATURITY,
                f"cell:{cell_id}:{now or 'removed'}",
                f"Catalog cell {cell_id} went from {maturity} to {now or 'removed'}.",
                "capability.maturity",
                {"cell_id": int(cell_id), "before": maturity, "after": now},
            )
        )
    return findings


def drift_finding(
    *, key: str, label: str, reference: WorkloadSample, observed: WorkloadSample
) -> Finding | None:
    verdict = workload_drift(reference, observed)
    if not verdict.drifted:
        return None
    return Finding(
        TriggerKind.WORKLOAD_DRIFT,
        key,
        f"{label}: " + "; ".join(verdict.reasons) + ".",
        "workload",
        {"figures": verdict.figures},
    )


def age_finding(*, accepted_at: datetime | None, days: int, now: datetime) -> Finding | None:
    if accepted_at is None or now < accepted_at + timedelta(days=days):
        return None
    return Finding(
        TriggerKind.AGE,
        f"age:{accepted_at.date().isoformat()}+{days}d",
        f"Accepted on {accepted_at.date().isoformat()}; revalidate after {days} days.",
        "",
        {"accepted_at": accepted_at.isoformat(), "days": days},
    )
