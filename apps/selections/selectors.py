"""Reads of selections, their candidates and traces, always scoped to the acting team."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, FloatField, Q, QuerySet, TextField, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from stackselect_domain.slo import SLO

from apps.accounts.scoping import get_scoped_or_404, scoped
from apps.audit.models import AuditEvent
from apps.selections.choices import CandidateOutcome, ComputeState, SelectionState
from apps.selections.models import Candidate, Selection, WorkloadTrace
from apps.selections.signals import measurements_wanted, stages_wanted
from apps.selections.workload_words import (
    arrival_text,
    length_text,
    precisions,
    sharing_text,
)

GROUP_EXAMPLES = 3
# Lines on the candidate page's goodput chart, the leading distinct curves.
CHART_CURVES = 5
# Filters on the candidate list, by query parameter -> key of Candidate.stack.
STACK_FILTERS = {"engine": "engine", "accelerator": "accelerator", "precision": "precision"}
# A serving layer (an orchestrator or a KV layer) over an engine repeats the engine's figures:
# the lists can show the engines alone, or only the stacks with a layer.
LAYERS_NONE, LAYERS_ONLY = "none", "only"
LAYER_CHOICES = {
    LAYERS_NONE: "the engine alone (no serving layer)",
    LAYERS_ONLY: "with a serving layer only",
}


def selections_of(*, team: Any) -> QuerySet[Selection]:
    return scoped(Selection.objects.select_related("model"), team)


def listed_selections(*, team: Any, archived: bool = False) -> QuerySet[Selection]:
    """The list page's selections: the live ones, or only the archived ones."""
    selections = selections_of(team=team)
    if archived:
        return selections.filter(state=SelectionState.ARCHIVED)
    return selections.exclude(state=SelectionState.ARCHIVED)


def computation_status(*, selection: Selection, status_url: str) -> dict[str, Any]:
    """What a poller needs: the computation's state, its error, and the counts once done."""
    counts: dict[str, int | None] = dict.fromkeys(CandidateOutcome.values)
    if selection.computation == ComputeState.DONE:
        counts = dict.fromkeys(CandidateOutcome.values, 0)
        rows = Candidate.objects.filter(selection=selection).values("outcome")
        counts |= dict(rows.annotate(n=Count("id")).values_list("outcome", "n"))
    return {
        "state": selection.state,
        "computation": selection.computation,
        "error": selection.computation_error,
        "kept_count": counts[CandidateOutcome.KEPT],
        "dropped_count": counts[CandidateOutcome.DROPPED],
        "status_url": status_url,
    }


def selection_get(*, team: Any, selection_id: int) -> Selection:
    return get_scoped_or_404(
        Selection.objects.select_related("model", "team"), team, pk=selection_id
    )


def traces_of(*, selection: Selection) -> QuerySet[WorkloadTrace]:
    return scoped(WorkloadTrace.objects.filter(selection=selection), selection.team).defer("rows")


def candidates_filtered(
    *, selection: Selection, outcome: str, params: Mapping[str, str] | None = None
) -> QuerySet[Candidate]:
    """Candidates of one outcome, filtered by stack fields, serving layers (`layers`: "none"
    or "only") and, for dropped ones, reason code.

    Reads only the JSON columns the lists show, so no foreign row is fetched.
    """
    candidates = Candidate.objects.filter(selection=selection, outcome=outcome)
    params = params or {}
    for param, key in STACK_FILTERS.items():
        if params.get(param):
            candidates = candidates.filter(**{f"stack__{key}": params[param]})
    gpu_count = str(params.get("gpu_count") or "")
    if gpu_count.isascii() and gpu_count.isdigit():
        candidates = candidates.filter(stack__gpu_count=int(gpu_count))
    if params.get("q"):
        # Free text matches any part of the stack (engine, version, backend, layers, hardware).
        candidates = candidates.alias(stack_text=Cast("stack", TextField())).filter(
            stack_text__icontains=params["q"]
        )
    if params.get("layers") == LAYERS_NONE:
        candidates = candidates.filter(stack__layers=[])
    elif params.get("layers") == LAYERS_ONLY:
        candidates = candidates.exclude(stack__layers=[])
    if outcome == CandidateOutcome.DROPPED and params.get("code"):
        # The quoted code matches a JSON string value on every database backend.
        candidates = candidates.filter(reasons__icontains=f'"{params["code"]}"')
    return candidates.only(
        "id",
        "selection",
        "rank",
        "stack",
        "score",
        "estimate",
        "hints",
        "reasons",
        "capability_ids",
        "chosen",
    ).order_by("rank", "id")


def chosen_candidates(*, selection: Selection) -> QuerySet[Candidate]:
    """The kept candidates chosen for benchmarking, best first: the tray on every page."""
    kept = candidates_filtered(selection=selection, outcome=CandidateOutcome.KEPT)
    return kept.filter(chosen=True)


def chosen_no_longer_kept(*, selection: Selection) -> list[dict[str, Any]]:
    """The chosen stacks the latest computation of the selection did not keep again (so they
    left the choice), from its audit event; none when every pick was kept."""
    after = (
        AuditEvent.objects.filter(
            action="selection.candidates_compute",
            object_type=Selection._meta.label_lower,
            object_id=str(selection.pk),
        )
        .order_by("-pk")
        .values_list("after", flat=True)
        .first()
    )
    lost = (after or {}).get("chosen_no_longer_kept")
    return lost if isinstance(lost, list) else []


def kept_stack_values(*, selection: Selection) -> dict[str, list[Any]]:
    """The distinct engines, accelerators, precisions and GPU counts among the kept candidates:
    the choices of the plan page's filters."""
    kept = Candidate.objects.filter(selection=selection, outcome=CandidateOutcome.KEPT).order_by()
    fields = (*STACK_FILTERS.values(), "gpu_count")
    return {  # distinct in the database: a handful of values, not every kept row
        field: sorted(set(kept.values_list(f"stack__{field}", flat=True).distinct()) - {None})
        for field in fields
    }


def chosen_ids(*, selection: Selection) -> set[int]:
    return set(chosen_candidates(selection=selection).values_list("pk", flat=True))


@dataclass(frozen=True)
class DroppedGroup:
    code: str
    count: int
    examples: list[str]
    message: str


def _label(stack: Mapping[str, Any]) -> str:
    backend = f" / {stack['backend']}" if stack.get("backend") else ""
    return (
        f"{stack['engine']} {stack['engine_version']}{backend} on {stack['gpu_count']}x "
        f"{stack['accelerator']} (tp{stack['tp']} pp{stack['pp']} ep{stack['ep']} "
        f"dp{stack['dp']}, {stack['precision']})"
    )


def group_dropped(
    rows: Iterable[tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]]],
) -> list[DroppedGroup]:
    """Dropped stacks (stack, reasons) grouped by reason code, largest group first, with a few
    examples each; a stack with several reasons counts in each group."""
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    messages: dict[str, str] = {}
    for stack, reasons in rows:
        for reason in reasons:
            code = reason["code"]
            counts[code] = counts.get(code, 0) + 1
            messages.setdefault(code, reason["message"])
            if len(examples.setdefault(code, [])) < GROUP_EXAMPLES:
                examples[code].append(_label(stack))
    return [
        DroppedGroup(code, count, examples[code], messages[code])
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def dropped_groups(*, selection: Selection) -> list[DroppedGroup]:
    """The groups stored when the candidates were computed; selections computed before they
    were stored are grouped from their rows."""
    if selection.dropped_groups is not None:
        return [DroppedGroup(**group) for group in selection.dropped_groups]
    rows = Candidate.objects.filter(selection=selection, outcome=CandidateOutcome.DROPPED)
    return group_dropped(rows.order_by("id").values_list("stack", "reasons").iterator(2000))


@dataclass(frozen=True)
class SimulatedShare:
    """How the simulated comparison's replicas read against their own analytic figure."""

    replicas: int
    low: float
    median: float
    high: float


@dataclass(frozen=True)
class SimulatedComparison:
    """What the page says of the simulated comparison as a whole.

    - methods: the methods that timed its rows, each once; more than one means its order sets
      methods whose errors differ against each other (the roofline on one GPU, AIConfigurator's
      measured kernels on another)
    - share: each simulated replica's goodput per GPU over its analytic one, when the list also
      has analytic rows: the analytic estimate queues nothing, so a figure from it sits beside
      the simulated ones without being comparable, and this says by how much they differ here
    """

    methods: list[str]
    share: SimulatedShare | None


def simulated_comparison(*, selection: Selection) -> SimulatedComparison:
    """Both from one query over the kept rows' distinct figures (backends and dp copies of a
    replica share them); an analytic row's figures are read as null, so however many there
    are they come back as one row that says they exist."""
    simulated = Q(estimate__comparison="simulated")

    def if_simulated(key: str, field: FloatField | TextField) -> Case:
        # read as text and cast: a key's JSON value comes back as jsonb text on PostgreSQL and
        # as a bare SQL number on SQLite, which a JSONField output cannot decode on both
        value = Cast(KeyTextTransform(key, "estimate"), field)
        return Case(When(simulated, then=value), output_field=field)

    rows = (
        Candidate.objects.filter(selection=selection, outcome=CandidateOutcome.KEPT)
        .values_list(
            "estimate__comparison",
            if_simulated("label", TextField()),
            if_simulated("goodput_per_gpu_rps", FloatField()),
            if_simulated("analytic_goodput_per_gpu_rps", FloatField()),
        )
        .distinct()
    )
    methods, ratios, analytic_rows = set(), [], False
    for comparison, label, figure, analytic in rows:
        if comparison != "simulated":
            analytic_rows = True
            continue
        if label:
            methods.add(label)
        if figure is not None and analytic:
            ratios.append(figure / analytic)
    return SimulatedComparison(sorted(methods), _share(ratios) if analytic_rows else None)


def _share(ratios: list[float]) -> SimulatedShare | None:
    if not ratios:
        return None
    ratios.sort()
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return SimulatedShare(len(ratios), ratios[0], median, ratios[-1])


def leading_curves(*, kept: QuerySet[Candidate]) -> list[tuple[str, list[dict[str, float]]]]:
    """Goodput curves of the leading candidates of `kept` (the list as filtered) that have one,
    in rank order, each distinct curve once: rows that differ only in a layer the estimate does
    not model share their replica's curve, and five copies of one line under five labels would
    read as five stacks."""
    curves: list[tuple[str, list[dict[str, float]]]] = []
    for candidate in kept.filter(estimate__has_key="curve").iterator(chunk_size=100):
        curve = candidate.estimate["curve"]
        if any(curve == drawn for _, drawn in curves):
            continue
        layers = candidate.stack.get("layers") or []
        with_layers = f" with {', '.join(layers)}" if layers else ""
        curves.append((f"#{candidate.rank} {_label(candidate.stack)}{with_layers}", curve))
        if len(curves) == CHART_CURVES:
            break
    return curves


def traces_of_team(*, team: Any) -> QuerySet[WorkloadTrace]:
    """Every trace the team uploaded, newest first: the ones a workload may replay."""
    return scoped(WorkloadTrace.objects.all(), team).defer("rows")


def team_trace(*, team: Any, trace_id: Any, with_rows: bool = False) -> WorkloadTrace | None:
    """The team's trace with this id, or None (another team's trace is as absent as none)."""
    traces = scoped(WorkloadTrace.objects.all(), team)
    return (traces if with_rows else traces.defer("rows")).filter(pk=trace_id).first()


def trace_with_rows(*, trace_id: int) -> WorkloadTrace:
    """One trace with its rows (the listing defers them); callers pass an id already scoped."""
    return WorkloadTrace.objects.get(pk=trace_id)


def measured_for(*, candidates: Iterable[Candidate]) -> dict[int, list[dict[str, Any]]]:
    """Predicted-versus-measured rows per candidate id, for candidates with measured results
    (the evidence app answers `measurements_wanted`, matching results to candidates by stack)."""
    rows: dict[int, list[dict[str, Any]]] = {}
    for _, answer in measurements_wanted.send(sender=Candidate, candidates=list(candidates)):
        for candidate_id, measured in (answer or {}).items():
            rows.setdefault(candidate_id, []).extend(measured)
    return rows


def stage_labels(*, selections: Iterable[Selection]) -> dict[int, str]:
    """{selection id: where it stands}, as the apps above answer `stages_wanted`; a selection
    no receiver answers for stands at its own state."""
    selections = list(selections)
    labels = {selection.pk: selection.get_state_display() for selection in selections}
    for _, answer in stages_wanted.send(sender=Selection, selections=selections):
        labels |= answer or {}
    return labels


def goal_words(*, selection: Selection) -> dict[str, Any]:
    """The parts of the goal summary that need more than a template, in the decision record's
    words: the lengths and arrival, the precisions (one word or a list of them), the SLO with
    its defaults filled in, and what the requests share."""
    workload = selection.workload
    return {
        "isl": length_text(workload["isl"]),
        "osl": length_text(workload["osl"]),
        "arrival": arrival_text(workload["arrival"]),
        "precisions": precisions(workload),
        "slo": SLO.from_dict(selection.slo).describe(),
        "sharing": sharing_text(workload),
    }
