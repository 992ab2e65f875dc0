"""Forms of the decisions pages; they only gather input, the services validate and write."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.decisions.choices import TriggerKind
from apps.decisions.models import DecisionRecord
from apps.decisions.services import MAX_REVALIDATE_DAYS, DecisionText
from apps.selections.selectors import selections_of


class NewRecordForm(forms.Form):
    # No selection is pre-chosen: a record for the newest one by default is easy to misfile.
    selection = forms.ModelChoiceField(queryset=None, empty_label="Choose a selection")
    title = forms.CharField(max_length=200)

    def __init__(self, *args: Any, team: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["selection"].queryset = selections_of(team=team)


class RecordTextForm(forms.Form):
    """The decision part; one "why dropped" field per compared candidate, named dropped_<key>."""

    title = forms.CharField(max_length=200)
    chosen = forms.ChoiceField(widget=forms.RadioSelect, required=False)
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    risks = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    revalidate_after_days = forms.IntegerField(min_value=1, max_value=MAX_REVALIDATE_DAYS)
    retest_kinds = forms.MultipleChoiceField(
        choices=TriggerKind.choices, widget=forms.CheckboxSelectMultiple, required=False
    )
    refresh = forms.BooleanField(
        required=False, label="Re-read the goal, candidates and evidence from the selection"
    )

    def __init__(self, *args: Any, record: DecisionRecord, **kwargs: Any) -> None:
        kwargs.setdefault("initial", self.initial_from(record))
        super().__init__(*args, **kwargs)
        self.record = record
        self.fields["chosen"].choices = [
            (entry["key"], f"{entry['key']}: {entry['label']}") for entry in record.candidates
        ]
        for entry in record.candidates:
            self.fields[f"dropped_{entry['key']}"] = forms.CharField(
                label=f"Why {entry['key']} was dropped",
                required=False,
                widget=forms.Textarea(attrs={"rows": 2}),
            )

    @staticmethod
    def initial_from(record: DecisionRecord) -> dict[str, Any]:
        return {
            "title": record.title,
            "chosen": record.chosen_key,
            "rationale": record.rationale,
            "risks": record.risks,
            "revalidate_after_days": record.revalidate_after_days,
            "retest_kinds": record.retest_kinds,
            **{f"dropped_{key}": reason for key, reason in record.dropped.items()},
        }

    def dropped_fields(self) -> list[forms.BoundField]:
        return [self[f"dropped_{entry['key']}"] for entry in self.record.candidates]

    def text(self) -> DecisionText:
        data = self.cleaned_data
        ids = {entry["key"]: entry["candidate_id"] for entry in self.record.candidates}
        return DecisionText(
            title=data["title"],
            chosen_candidate_id=ids.get(data["chosen"]),
            rationale=data["rationale"],
            dropped={ids[key]: data[f"dropped_{key}"] for key in ids},
            risks=data["risks"],
            revalidate_after_days=data["revalidate_after_days"],
            retest_kinds=data["retest_kinds"],
        )


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
