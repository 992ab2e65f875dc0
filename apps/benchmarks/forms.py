"""The plan form: load points as a kind and a list of levels, the rest of PlanOptions as fields."""

from __future__ import annotations

from typing import Any

from django import forms
from stackselect_domain.speculative import (
    MAX_DRAFT_TOKENS,
    METHOD_LABELS,
    MIN_DRAFT_TOKENS,
    SPECULATIVE_METHODS,
    Speculative,
    SpeculativeError,
)
from stackselect_domain.tuning import TUNABLE

from apps.benchmarks.choices import PlanMode, RunMode
from apps.benchmarks.plan_identity import (
    ATTEMPTS_HELP,
    DEFAULT_MAX_PROBES,
    ERROR_RATE_HELP,
    EVALUATION_NAME,
    GREEDY,
    MAX_LOAD_POINTS,
    MAX_REQUEST_COUNT,
    MAX_TEMPERATURE,
    WINDOW_HELP,
    PlanOptions,
)

LOAD_KINDS = (("rate_rps", "Rates (requests/s)"), ("concurrency", "Concurrencies"))
SPECULATIVE_CHOICES = (("", "Off"), *((m, METHOD_LABELS[m]) for m in SPECULATIVE_METHODS))


class PlanForm(forms.Form):
    title = forms.CharField(max_length=200, required=False)
    run_mode = forms.ChoiceField(
        label="Engine",
        choices=RunMode.choices,
        initial=RunMode.MEASURED,
        required=False,
        widget=forms.RadioSelect,
        help_text="Measured runs each stack's own engine on a runner that has it; a job waits "
        "until such a runner is online. A dry run uses the simulated engine (for demos and for "
        "trying the pipeline): its results are labelled simulated everywhere.",
    )
    mode = forms.ChoiceField(choices=PlanMode.choices, initial=PlanMode.FIXED)
    load_kind = forms.ChoiceField(choices=LOAD_KINDS, initial="rate_rps")
    load_levels = forms.CharField(
        required=False,
        help_text="Comma-separated, e.g. 1, 2, 4. Empty: half, once and twice the goal's load.",
    )
    request_count = forms.IntegerField(min_value=1, max_value=MAX_REQUEST_COUNT, initial=200)
    max_probes = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_LOAD_POINTS,
        initial=DEFAULT_MAX_PROBES,
        help_text="Search only: at most this many rates are measured, each with every request; "
        "the search runs between the lowest and the highest rate above.",
    )
    seed = forms.IntegerField(min_value=0, initial=0)
    warmup_requests = forms.IntegerField(min_value=0, max_value=1000, initial=4)
    measurement_window_s = forms.FloatField(min_value=1, initial=120, help_text=WINDOW_HELP)
    max_error_rate = forms.FloatField(
        min_value=0, max_value=1, initial=0.05, help_text=ERROR_RATE_HELP
    )
    max_attempts = forms.IntegerField(min_value=1, max_value=10, initial=3, help_text=ATTEMPTS_HELP)
    request_timeout_s = forms.FloatField(min_value=1, initial=120)
    endpoint = forms.ChoiceField(
        choices=(("completions", "Completions"), ("chat", "Chat completions"))
    )
    temperature = forms.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_TEMPERATURE,
        initial=GREEDY,
        label="Sampling temperature",
        help_text="Every request asks for it; 0 is greedy decoding, what vLLM's benchmark client "
        "sends. Speculative acceptance depends on it. Empty: send none, so each engine samples "
        "at its own default.",
    )
    tuning_sweep = forms.BooleanField(
        required=False,
        help_text="Run each candidate at its defaults, its engine's documented recommendation "
        "for this workload and the values below; the best setting under the SLO is compared.",
    )
    sweep_max_num_seqs = forms.CharField(
        required=False, label="Sweep: max sequences", help_text="Comma-separated, e.g. 16, 64."
    )
    sweep_max_num_batched_tokens = forms.CharField(
        required=False,
        label="Sweep: batched-token budget",
        help_text="Comma-separated, e.g. 2048, 8192.",
    )
    sweep_cuda_graph_max_batch = forms.CharField(
        required=False,
        label="Sweep: CUDA-graph capture limit",
        help_text="Comma-separated, e.g. 256, 512 (engines without CUDA graphs refuse it).",
    )
    speculative_method = forms.ChoiceField(
        choices=SPECULATIVE_CHOICES,
        required=False,
        label="Speculative decoding",
        help_text="Every candidate runs with it and the plan's identity records it. A candidate "
        "whose engine cannot speculate this way is refused by name (TGI: n-gram only; LMDeploy: "
        "EAGLE and EAGLE-3; llama.cpp: a draft model on llama-server, n-gram on "
        "llama-cpp-python). Not for a dry run: the simulated engine does not model it.",
    )
    speculative_draft_model = forms.CharField(
        required=False,
        max_length=300,
        label="Speculative: draft model",
        help_text="The draft checkpoint's name, for a draft model, EAGLE or EAGLE-3; empty "
        "otherwise. Runners launch it from their own model store, so only a runner that has it "
        "for the plan's model takes the jobs (`stackselect-runner models add <name> <path> "
        "--draft-for <model>`).",
    )
    speculative_num_tokens = forms.IntegerField(
        required=False,
        min_value=MIN_DRAFT_TOKENS,
        max_value=MAX_DRAFT_TOKENS,
        label="Speculative: draft tokens",
        help_text=f"Tokens proposed per step, {MIN_DRAFT_TOKENS} to {MAX_DRAFT_TOKENS}.",
    )
    quality_probe = forms.BooleanField(
        required=False, initial=True, help_text="Send the fixed quality prompts after the load."
    )
    evaluation = forms.RegexField(
        regex=EVALUATION_NAME,
        required=False,
        help_text="Optional: the name of an evaluation command registered on the runner.",
    )

    def clean_run_mode(self) -> str:
        """Measured unless a dry run is chosen: the simulator is never picked by default."""
        return self.cleaned_data["run_mode"] or RunMode.MEASURED

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["speculative"] = self._speculative(data)
        return data

    def _speculative(self, data: dict[str, Any]) -> Speculative | None:
        """The speculative setting, its problems on the field they concern."""
        method = data.get("speculative_method") or ""
        draft = data.get("speculative_draft_model") or ""
        tokens = data.get("speculative_num_tokens")
        if not method:
            if draft or tokens is not None:
                self.add_error(
                    "speculative_method", "Choose a method, or leave the draft fields empty."
                )
            return None
        try:
            # A missing token count is the field's own error below, not the draft model's.
            spec = Speculative.from_dict(
                {
                    "method": method,
                    "draft_model": draft or None,
                    "num_tokens": MIN_DRAFT_TOKENS if tokens is None else tokens,
                }
            )
        except SpeculativeError as error:
            self.add_error(f"speculative_{error.field or 'method'}", error.message)
            spec = None
        if tokens is None:
            if "speculative_num_tokens" not in self.errors:
                self.add_error(
                    "speculative_num_tokens", "Give the number of draft tokens per step."
                )
            return None
        return spec

    def clean_load_levels(self) -> list[float]:
        text = self.cleaned_data["load_levels"].strip()
        if not text:
            return []
        try:
            return [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
        except ValueError as error:
            raise forms.ValidationError("Give numbers separated by commas.") from error

    def _whole_numbers(self, name: str) -> list[int]:
        text = self.cleaned_data.get(name, "").strip()
        try:
            return [int(part) for part in text.replace(";", ",").split(",") if part.strip()]
        except ValueError as error:
            raise forms.ValidationError(
                {name: "Give whole numbers separated by commas."}
            ) from error

    def tuning_values(self) -> dict[str, list[int]]:
        values = {word: self._whole_numbers(f"sweep_{word}") for word in TUNABLE}
        return {word: numbers for word, numbers in values.items() if numbers}

    def load_points(self) -> list[dict[str, Any]]:
        kind = self.cleaned_data["load_kind"]
        levels = self.cleaned_data["load_levels"]
        if kind == "concurrency":
            return [{"concurrency": round(level)} for level in levels]
        return [{"rate_rps": level} for level in levels]

    def options(self) -> PlanOptions:
        data = self.cleaned_data
        return PlanOptions(
            mode=data["mode"],
            run_mode=data["run_mode"],
            seed=data["seed"],
            request_count=data["request_count"],
            load_points=tuple(self.load_points()),
            warmup_requests=data["warmup_requests"],
            measurement_window_s=data["measurement_window_s"],
            max_error_rate=data["max_error_rate"],
            max_attempts=data["max_attempts"],
            request_timeout_s=data["request_timeout_s"],
            endpoint=data["endpoint"],
            temperature=data.get("temperature"),
            max_probes=data["max_probes"] or DEFAULT_MAX_PROBES,
            tuning_sweep=data["tuning_sweep"],
            tuning_values=self.tuning_values() or None,
            quality_probe=data["quality_probe"],
            evaluation=data["evaluation"] or "",
            speculative=data.get("speculative"),
        )
