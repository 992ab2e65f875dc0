"""The import form of the evidence page: a tool, its files by role, and what they do not say."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from apps.evidence.tool_files import TOOLS


class ImportForm(forms.Form):
    tool = forms.ChoiceField(choices=[(key, spec.label) for key, spec in TOOLS.items()])
    candidate = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        help_text="The candidate these files measured.",
    )
    tool_version = forms.CharField(required=False, max_length=100)
    rate_rps = forms.FloatField(required=False, min_value=0, label="Rate (req/s)")
    concurrency = forms.IntegerField(required=False, min_value=1)
    identity = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='Identity fields the files do not state, as JSON, e.g. {"engine": "vllm"}.',
    )
    result = forms.FileField(required=False, help_text="vllm bench: the saved result JSON")
    report = forms.FileField(required=False, help_text="guidellm: benchmarks.json")
    summary = forms.FileField(
        required=False,
        help_text="AIPerf: profile_export_aiperf.json; inference-perf: summary_lifecycle_metrics",
    )
    records = forms.FileField(required=False, help_text="AIPerf: profile_export.jsonl")
    per_request = forms.FileField(
        required=False, help_text="inference-perf: per_request_lifecycle_metrics.json"
    )

    def __init__(self, *args: Any, candidates: list[tuple[int, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["candidate"].choices = [("", "none"), *candidates]

    def clean_identity(self) -> dict[str, Any]:
        text = self.cleaned_data["identity"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise forms.ValidationError(f"Not JSON: {error.msg}.") from error
        if not isinstance(value, dict):
            raise forms.ValidationError("Must be a JSON object.")
        return value
