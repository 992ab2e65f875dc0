"""Curation forms (pages and admin) and the forms of the compare and import pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.db import models

from apps.catalog.editable import (
    CAPABILITY_FIELDS,
    ENGINE_FIELDS,
    FEATURE_FIELDS,
    RELEASE_FIELDS,
)
from apps.catalog.interchange import FILE_FORMATS
from apps.catalog.maturity_rule import CellEvidence, maturity_change_errors
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    ModelSpec,
)

DATE_INPUT = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
COMPARE_MIN, COMPARE_MAX = 2, 4


def _form_field(field: models.Field, **kwargs: Any) -> forms.Field | None:
    """Every catalog link is a web page: a URL typed without a scheme means https."""
    if isinstance(field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return field.formfield(**kwargs)


class CatalogModelForm(forms.ModelForm):
    class Meta:
        formfield_callback = _form_field


class CapabilityForm(CatalogModelForm):
    """A cell; refuses a maturity change that does not come with new evidence."""

    class Meta(CatalogModelForm.Meta):
        model = Capability
        fields = CAPABILITY_FIELDS
        widgets = {"as_of": DATE_INPUT, "note": forms.Textarea(attrs={"rows": 3})}
        help_texts = {
            "evidence_url": "Where the maturity can be read (docs, release notes, source).",
            "as_of": "When the evidence was checked. A maturity change needs a new URL or date.",
        }

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.instance.pk and "maturity" in self.changed_data:
            errors = maturity_change_errors(
                before=CellEvidence(
                    self.initial["maturity"], self.initial["evidence_url"], self.initial["as_of"]
                ),
                after=CellEvidence(
                    cleaned.get("maturity") or "",
                    cleaned.get("evidence_url") or "",
                    cleaned.get("as_of"),
                ),
            )
            for field_name, message in errors.items():
                self.add_error(field_name, message)
        return cleaned


class EngineForm(CatalogModelForm):
    class Meta(CatalogModelForm.Meta):
        model = Engine
        fields = ENGINE_FIELDS
        widgets = {"status_as_of": DATE_INPUT}


class EngineReleaseForm(CatalogModelForm):
    class Meta(CatalogModelForm.Meta):
        model = EngineRelease
        fields = RELEASE_FIELDS
        widgets = {"release_date": DATE_INPUT, "as_of": DATE_INPUT, "defaults_as_of": DATE_INPUT}


class AcceleratorForm(CatalogModelForm):
    class Meta(CatalogModelForm.Meta):
        model = Accelerator
        exclude: list[str] = []


class ModelSpecForm(CatalogModelForm):
    class Meta(CatalogModelForm.Meta):
        model = ModelSpec
        exclude: list[str] = []


class FeatureForm(CatalogModelForm):
    class Meta(CatalogModelForm.Meta):
        model = Feature
        fields = FEATURE_FIELDS


class CopyForwardForm(forms.Form):
    version = forms.CharField(max_length=40, help_text="The new release's version.")
    release_date = forms.DateField(required=False, widget=DATE_INPUT)


class CompareForm(forms.Form):
    engines = forms.ModelMultipleChoiceField(
        queryset=Engine.objects.all(),
        to_field_name="slug",
        widget=forms.CheckboxSelectMultiple,
        help_text=f"Pick {COMPARE_MIN} to {COMPARE_MAX} engines.",
    )

    def clean_engines(self) -> list[Engine]:
        engines = list(self.cleaned_data["engines"])
        if not COMPARE_MIN <= len(engines) <= COMPARE_MAX:
            raise forms.ValidationError(
                f"Pick {COMPARE_MIN} to {COMPARE_MAX} engines; {len(engines)} were picked."
            )
        return engines


class ImportForm(forms.Form):
    file = forms.FileField(help_text="The whole matrix, as exported (CSV or JSON).")
    file_format = forms.ChoiceField(
        choices=[("", "From the file name"), *((name, name.upper()) for name in FILE_FORMATS)],
        required=False,
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        upload = cleaned.get("file")
        if upload is not None and not cleaned.get("file_format"):
            suffix = Path(upload.name).suffix.lower().lstrip(".")
            if suffix not in FILE_FORMATS:
                self.add_error(
                    "file_format", "Name the format: the file ends in neither .csv nor .json."
                )
            cleaned["file_format"] = suffix
        return cleaned
