"""The goal wizard's form: flat fields for people, turned into the API's goal document.

The form does no validation of its own beyond types: `to_document()` builds the same JSON the
API takes, the API serializer validates it, and `add_document_errors` puts each nested error
(workload.isl.mean) back on the field that produced it.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from stackselect_domain.quality import DEFAULT_QUALITY_TOLERANCE
from stackselect_domain.vocabulary import (
    ARRIVAL_PROCESSES,
    DEFAULT_PRECISION,
    KV_DTYPES,
    LENGTH_KINDS,
    PRECISION_WORDS,
    first_precision,
)
from stackselect_domain.words import grouped

from apps.catalog.choices import AttentionKind
from apps.catalog.models import Accelerator, Feature, ModelSpec
from apps.selections import selectors
from apps.selections.choices import OperationalNeed
from apps.selections.slo_presets import PRESETS, preset_choices, presets_for_page

# Labels for the vocabulary's words. A row-by-row "replay" length is not offered: the form
# replays a trace by choosing the arrival process "trace".
_LENGTH_LABELS = {
    "fixed": "Fixed",
    "normal": "Normal (mean, std)",
    "lognormal": "Lognormal (median, sigma)",
    "empirical": "Empirical (from the uploaded trace)",
}
LENGTH_CHOICES = [(kind, _LENGTH_LABELS[kind]) for kind in LENGTH_KINDS if kind in _LENGTH_LABELS]
_ARRIVAL_LABELS = {
    "poisson": "Poisson at a rate",
    "gamma": "Gamma at a rate, with burstiness",
    "constant": "Constant rate",
    "trace": "Replay an uploaded trace",
}
ARRIVALS = [
    *[(process, _ARRIVAL_LABELS[process]) for process in ARRIVAL_PROCESSES],
    ("closed", "Closed loop at a concurrency"),
]
# The custom architecture's fields (API names) and the form field each takes, in form order.
_WHOLE = {"required": False, "min_value": 1}
CUSTOM_MODEL_FIELDS: tuple[tuple[str, type[forms.Field], dict[str, Any]], ...] = (
    ("name", forms.CharField, {"required": False, "max_length": 120}),
    ("architecture", forms.ChoiceField, {"required": False}),
    ("params_total_b", forms.FloatField, {"required": False, "label": "Parameters (B)"}),
    ("params_active_b", forms.FloatField, {"required": False, "label": "Active parameters (B)"}),
    ("layers", forms.IntegerField, _WHOLE),
    ("hidden_size", forms.IntegerField, _WHOLE),
    ("attention_heads", forms.IntegerField, _WHOLE),
    ("kv_heads", forms.IntegerField, _WHOLE),
    ("head_dim", forms.IntegerField, _WHOLE),
    ("attention_kind", forms.ChoiceField, {"required": False}),
    ("max_context", forms.IntegerField, _WHOLE),
    ("sliding_window", forms.IntegerField, _WHOLE),
    ("sliding_window_layers", forms.IntegerField, _WHOLE),
    ("kv_lora_rank", forms.IntegerField, _WHOLE),
    ("qk_rope_head_dim", forms.IntegerField, _WHOLE),
    ("experts_total", forms.IntegerField, _WHOLE),
    ("experts_active", forms.IntegerField, _WHOLE),
)
CUSTOM_PREFIX = "custom_"
# The model choice that means "describe the architecture below"; empty means "not chosen yet".
CUSTOM_CHOICE = "custom-architecture"
# The API's words for an empty required value.
_MISSING_VALUE = {"This field may not be null.", "This field is required."}
# API field -> the form field that holds it, for putting nested errors back.
_LENGTH_KEYS = {"value": "tokens", "mean": "tokens", "median": "tokens", "std": "spread"}
_LENGTH_KEYS |= {"sigma": "spread", "values": "kind", "kind": "kind"}


def _length_document(kind: str, tokens: float | None, spread: float | None) -> dict[str, Any]:
    if kind == "fixed":
        return {"kind": kind, "value": None if tokens is None else int(tokens)}
    if kind == "normal":
        return {"kind": kind, "mean": tokens, "std": spread}
    return {"kind": kind, "median": tokens, "sigma": spread}


def _length_fields(data: dict[str, Any]) -> tuple[float | None, float | None]:
    tokens = data.get("value", data.get("mean", data.get("median")))
    return tokens, data.get("std", data.get("sigma"))


FIELDSETS = (
    ("Workload", ("title", "model", "precision", "kv_dtype", "isl_kind", "isl_tokens")),
    ("", ("isl_spread", "osl_kind", "osl_tokens", "osl_spread", "max_context")),
    (
        "Custom model (when the model is Custom architecture)",
        tuple(f"{CUSTOM_PREFIX}{key}" for key, *_ in CUSTOM_MODEL_FIELDS),
    ),
    ("Arrival", ("arrival", "rate_rps", "concurrency", "burstiness", "peak_factor")),
    ("", ("trace", "speedup")),
    ("Sharing", ("prefix_share", "prefix_tokens", "multi_turn", "tool_share")),
    ("SLO", ("slo_preset", "ttft_ms", "tpot_ms", "e2e_ms", "percentile", "attainment")),
    (
        "Constraints",
        (
            "accelerators",
            "max_gpus",
            "required_features",
            "operational",
            "prices",
            "quality_tolerance",
        ),
    ),
)


def _number_or_text(text: str) -> float | str:
    """A typed line's number as the JSON document's number; anything else stays text, so the
    goal's serializer refuses it on its field as it would in the API."""
    try:
        return float(text)
    except ValueError:
        return text


class GoalForm(forms.Form):
    title = forms.CharField(max_length=160)
    model = forms.ChoiceField(
        help_text="From the catalog, or a custom architecture described below.",
        error_messages={
            "required": "Choose a model from the catalog, or Custom architecture to describe one."
        },
    )
    precision = forms.ChoiceField(
        choices=[(p, p) for p in PRECISION_WORDS], initial=DEFAULT_PRECISION
    )
    kv_dtype = forms.ChoiceField(
        choices=[("", "16-bit (engine default)")] + [(k, k) for k in KV_DTYPES],
        required=False,
        label="KV cache precision",
    )
    isl_kind = forms.ChoiceField(choices=LENGTH_CHOICES, initial="fixed", label="Input length")
    isl_tokens = forms.FloatField(required=False, label="Input tokens (value, mean or median)")
    isl_spread = forms.FloatField(required=False, label="Input spread (std or sigma)")
    osl_kind = forms.ChoiceField(choices=LENGTH_CHOICES, initial="fixed", label="Output length")
    osl_tokens = forms.FloatField(required=False, label="Output tokens (value, mean or median)")
    osl_spread = forms.FloatField(required=False, label="Output spread (std or sigma)")
    arrival = forms.ChoiceField(choices=ARRIVALS, initial="poisson")
    rate_rps = forms.FloatField(required=False, label="Rate (requests/s)")
    concurrency = forms.IntegerField(required=False)
    burstiness = forms.FloatField(
        required=False, help_text="Gamma shape: 1 is Poisson, <1 burstier."
    )
    peak_factor = forms.FloatField(required=False, initial=1.0)
    trace = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        help_text="One of your team's traces; its own lengths replace the ones above.",
    )
    speedup = forms.FloatField(
        required=False, initial=1.0, help_text="Replay speed: 2 sends the trace twice as fast."
    )
    prefix_share = forms.FloatField(initial=0.0, label="Share of requests with a shared prefix")
    prefix_tokens = forms.IntegerField(initial=0, label="Shared prefix tokens")
    multi_turn = forms.BooleanField(required=False, label="Multi-turn conversations")
    tool_share = forms.FloatField(initial=0.0, label="Share of tool-calling / structured requests")
    max_context = forms.IntegerField(required=False)
    slo_preset = forms.ChoiceField(
        choices=[("", "None: my own targets"), *preset_choices()],
        required=False,
        label="Start from a preset",
        help_text="Fills the targets below from a published source; edit them afterwards.",
    )
    ttft_ms = forms.FloatField(required=False, label="TTFT target (ms)")
    tpot_ms = forms.FloatField(required=False, label="TPOT target (ms)")
    e2e_ms = forms.FloatField(required=False, label="E2E target (ms)")
    percentile = forms.FloatField(initial=99.0)
    attainment = forms.FloatField(initial=0.99, help_text="Share of requests that must meet all.")
    accelerators = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: all."
    )
    max_gpus = forms.IntegerField(initial=8, label="Max GPUs")
    quality_tolerance = forms.FloatField(
        required=False,
        initial=DEFAULT_QUALITY_TOLERANCE,
        label="Quality tolerance",
        help_text="How far below the reference's probe correctness (a share, 0 to 1) a faster "
        "candidate may score before it is flagged as worse.",
    )
    required_features = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line: feature key and minimum maturity, e.g. prefix_caching stable.",
    )
    operational = forms.MultipleChoiceField(
        choices=OperationalNeed.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    prices = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line: accelerator slug and USD per GPU-hour, e.g. h100-sxm 2.5.",
    )

    def __init__(
        self,
        *args: Any,
        existing_workload: dict[str, Any] | None = None,
        team: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.existing_workload = existing_workload or {}
        models = list(ModelSpec.objects.values_list("slug", "name"))
        self.fields["model"].choices = [
            ("", "Choose a model"),
            *models,
            (CUSTOM_CHOICE, "Custom architecture (described below)"),
        ]
        self.fields["accelerators"].choices = list(Accelerator.objects.values_list("slug", "name"))
        self.fields["trace"].choices = [("", "—")] + [
            (trace.pk, f"{trace.name} ({grouped(trace.row_count)} requests)")
            for trace in selectors.traces_of_team(team=team).only("pk", "name", "row_count")
        ]
        for key, field_class, options in CUSTOM_MODEL_FIELDS:
            self.fields[f"{CUSTOM_PREFIX}{key}"] = field_class(**options)
        architectures = Feature.objects.filter(key__startswith="arch_").values_list("key", "name")
        self.fields["custom_architecture"].choices = [("", "—"), *architectures]
        self.fields["custom_attention_kind"].choices = [("", "—"), *AttentionKind.choices]

    presets = PRESETS

    @staticmethod
    def presets_for_page() -> dict[str, dict[str, Any]]:
        return presets_for_page()

    def fieldsets(self) -> list[tuple[str, list[forms.BoundField]]]:
        return [(legend, [self[name] for name in names]) for legend, names in FIELDSETS]

    # ------------------------------------------------------------ form -> document

    def _length(self, prefix: str) -> dict[str, Any]:
        data = self.cleaned_data
        kind = data[f"{prefix}_kind"]
        if kind == "empirical":
            return self.existing_workload.get(prefix) or {"kind": "empirical", "values": []}
        return _length_document(kind, data.get(f"{prefix}_tokens"), data.get(f"{prefix}_spread"))

    def _arrival(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data["arrival"] == "closed":
            arrival = {"concurrency": data.get("concurrency")}
        elif data["arrival"] == "trace":
            arrival = {"process": "trace", "trace": data.get("trace")}
            if data.get("speedup"):
                arrival["speedup"] = data["speedup"]
        else:
            arrival = {"process": data["arrival"], "rate_rps": data.get("rate_rps")}
            if data["arrival"] == "gamma":
                arrival["burstiness"] = data.get("burstiness")
        if data.get("peak_factor"):
            arrival["peak_factor"] = data["peak_factor"]
        return arrival

    def _pairs(self, name: str) -> list[list[str]]:
        lines = (self.cleaned_data.get(name) or "").splitlines()
        return [line.split() for line in lines if line.strip()]

    def _model(self) -> dict[str, Any]:
        """The catalog model, or the custom architecture's filled-in fields."""
        if self.cleaned_data["model"] != CUSTOM_CHOICE:
            return {"model": self.cleaned_data["model"]}
        custom = {
            key: self.cleaned_data.get(f"{CUSTOM_PREFIX}{key}") for key, *_ in CUSTOM_MODEL_FIELDS
        }
        return {
            "custom_model": {key: value for key, value in custom.items() if value not in (None, "")}
        }

    def to_document(self) -> dict[str, Any]:
        data = self.cleaned_data
        workload = {
            **self._model(),
            "precision": data["precision"],
            "isl": self._length("isl"),
            "osl": self._length("osl"),
            "arrival": self._arrival(),
            "prefix_share": data["prefix_share"],
            "prefix_tokens": data["prefix_tokens"],
            "multi_turn": data["multi_turn"],
            "tool_share": data["tool_share"],
            "max_context": data.get("max_context"),
        }
        if data.get("kv_dtype"):
            workload["kv_dtype"] = data["kv_dtype"]
        return {
            "title": data["title"],
            "workload": workload,
            "slo": {key: data.get(key) for key in ("ttft_ms", "tpot_ms", "e2e_ms")}
            | {"percentile": data["percentile"], "attainment": data["attainment"]}
            | ({"preset": data["slo_preset"]} if data.get("slo_preset") else {}),
            "constraints": {
                "accelerators": data["accelerators"],
                "max_gpus": data["max_gpus"],
                "required_features": [
                    {"feature": pair[0], "min_maturity": pair[1] if len(pair) > 1 else ""}
                    for pair in self._pairs("required_features")
                ],
                "operational": data["operational"],
                "prices": {
                    pair[0]: _number_or_text(pair[1]) if len(pair) > 1 else ""
                    for pair in self._pairs("prices")
                },
                "quality_tolerance": DEFAULT_QUALITY_TOLERANCE
                if data.get("quality_tolerance") is None
                else data["quality_tolerance"],
            },
        }

    # ------------------------------------------------------------ errors

    def add_document_errors(self, errors: dict[str, Any], path: tuple[str, ...] = ()) -> None:
        """Attach the serializer's nested errors to the fields they came from."""
        for key, value in errors.items():
            where = (*path, str(key))
            if isinstance(value, dict):
                self.add_document_errors(value, where)
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                for item in value:
                    self.add_document_errors(item, where)
            else:
                messages = value if isinstance(value, list) else [value]
                self.add_error(self._field_for(where), [self.in_page_words(m) for m in messages])

    def in_page_words(self, message: Any) -> str:
        """The API's message as the page says it: labels instead of field names (ttft_ms is
        "TTFT target (ms)"), and "Enter a value." where the API says a value may not be null."""
        text = str(message)
        if text in _MISSING_VALUE:
            return "Enter a value."
        for name, field in self.fields.items():
            if "_" in name and field.label:
                text = re.sub(rf"\b{name}\b", str(field.label), text)
        return text

    def _field_for(self, path: tuple[str, ...]) -> str | None:
        if path[0] in ("workload", "slo", "constraints"):
            path = path[1:]
        if not path:
            return None
        if path[0] == "preset":
            return "slo_preset"
        if path[0] == "custom_model" and len(path) > 1:
            name = f"{CUSTOM_PREFIX}{path[1]}"
            return name if name in self.fields else "model"
        if path[0] in ("isl", "osl") and len(path) > 1:
            return f"{path[0]}_{_LENGTH_KEYS.get(path[1], 'kind')}"
        if path[0] == "arrival":
            name = path[1] if len(path) > 1 else "arrival"
            return name if name in self.fields else "arrival"
        return path[0] if path[0] in self.fields else None

    # ------------------------------------------------------------ document -> form

    @staticmethod
    def initial_from(title: str, workload: dict, slo: dict, constraints: dict) -> dict[str, Any]:
        arrival = workload.get("arrival", {})
        custom = workload.get("custom_model") or {}
        initial: dict[str, Any] = {
            "title": title,
            "model": workload.get("model") or (CUSTOM_CHOICE if custom else ""),
            **{f"{CUSTOM_PREFIX}{key}": custom.get(key) for key, *_ in CUSTOM_MODEL_FIELDS},
            "precision": first_precision(workload.get("precision")),
            "kv_dtype": workload.get("kv_dtype", ""),
            "arrival": arrival.get("process", "closed"),
            **{k: arrival.get(k) for k in ("rate_rps", "concurrency", "burstiness", "peak_factor")},
            **{k: arrival.get(k) for k in ("trace", "speedup")},
            **{k: workload.get(k) for k in ("prefix_share", "prefix_tokens", "multi_turn")},
            **{k: workload.get(k) for k in ("tool_share", "max_context")},
            **{k: slo.get(k) for k in ("ttft_ms", "tpot_ms", "e2e_ms", "percentile")},
            "attainment": slo.get("attainment"),
            "slo_preset": slo.get("preset", ""),
            "accelerators": constraints.get("accelerators", []),
            "max_gpus": constraints.get("max_gpus", 8),
            "quality_tolerance": constraints.get("quality_tolerance", DEFAULT_QUALITY_TOLERANCE),
            "operational": constraints.get("operational", []),
            "required_features": "\n".join(
                f"{item['feature']} {item['min_maturity']}"
                for item in constraints.get("required_features", [])
            ),
            "prices": "\n".join(f"{k} {v}" for k, v in constraints.get("prices", {}).items()),
        }
        for prefix in ("isl", "osl"):
            length = workload.get(prefix, {})
            initial[f"{prefix}_kind"] = length.get("kind", "fixed")
            initial[f"{prefix}_tokens"], initial[f"{prefix}_spread"] = _length_fields(length)
        return initial


class TraceUploadForm(forms.Form):
    file = forms.FileField(
        help_text="CSV or JSONL: timestamp, input_tokens, output_tokens[, prefix_id]."
    )
    apply = forms.BooleanField(
        required=False, initial=True, label="Use its lengths and arrival in the workload"
    )
    replay = forms.BooleanField(
        required=False,
        label="Replay it request by request (else a gamma process with its rate and burstiness)",
    )


class CandidateFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search")
    engine = forms.CharField(required=False)
    accelerator = forms.CharField(required=False)
    precision = forms.CharField(required=False)
    gpu_count = forms.IntegerField(required=False, min_value=1, label="GPU count")
    layers = forms.ChoiceField(
        required=False,
        label="Serving layers",
        choices=[("", "any"), *selectors.LAYER_CHOICES.items()],
    )
    code = forms.CharField(required=False, label="Reason code")


class PlanFilterForm(CandidateFilterForm):
    """The plan page's filters offer the values its kept candidates have (no reason code:
    it lists kept candidates only)."""

    code = None

    def __init__(self, *args: Any, values: dict[str, list[Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, options in values.items():
            field = self.fields[name]
            self.fields[name] = forms.TypedChoiceField(
                required=False,
                label=field.label,
                coerce=type(options[0]) if options else str,
                choices=[("", "any")] + [(option, option) for option in options],
            )


def posted_ids(values: list[str]) -> list[int]:
    """The whole numbers among posted candidate ids; anything else cannot name a candidate."""
    return [int(value) for value in values if value.isdigit() and len(value) < 19]


# How many candidates the compare view sets side by side.
COMPARE_MIN, COMPARE_MAX = 2, 4


class CompareForm(forms.Form):
    """Two to four of the selection's chosen candidates, by id (?ids=1&ids=2)."""

    ids = forms.ModelMultipleChoiceField(
        queryset=None,
        label="Candidates to compare",
        error_messages={
            "invalid_choice": "Only candidates chosen for this selection can be compared.",
            "invalid_pk_value": "Only candidates chosen for this selection can be compared.",
            "required": f"Tick {COMPARE_MIN} to {COMPARE_MAX} chosen candidates to compare.",
        },
    )

    def __init__(self, *args: Any, selection: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["ids"].queryset = selectors.chosen_candidates(selection=selection)

    def clean_ids(self) -> Any:
        chosen = self.cleaned_data["ids"]
        if not COMPARE_MIN <= len(chosen) <= COMPARE_MAX:
            raise forms.ValidationError(
                f"Tick {COMPARE_MIN} to {COMPARE_MAX} chosen candidates to compare; "
                f"you ticked {len(chosen)}."
            )
        return chosen
