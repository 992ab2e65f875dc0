"""One FilterSet for the audit page and the audit API."""

from __future__ import annotations

import django_filters
from django import forms
from django.apps import apps

from apps.audit.models import AuditEvent

DATE_PICKER = forms.DateInput(attrs={"type": "date"})


class AuditEventFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(
        field_name="actor_name", lookup_expr="icontains", label="Actor"
    )
    action = django_filters.CharFilter(lookup_expr="exact")
    object_type = django_filters.CharFilter(lookup_expr="exact", label="Object type")
    object_id = django_filters.CharFilter(lookup_expr="exact", label="Object id")
    occurred_after = django_filters.DateFilter(
        field_name="occurred_at", lookup_expr="date__gte", label="From", widget=DATE_PICKER
    )
    occurred_before = django_filters.DateFilter(
        field_name="occurred_at", lookup_expr="date__lte", label="To", widget=DATE_PICKER
    )

    class Meta:
        model = AuditEvent
        fields = [
            "actor",
            "action",
            "object_type",
            "object_id",
            "occurred_after",
            "occurred_before",
        ]

    def offer_choices(self) -> None:
        """For the page: action and object type become lists of the values the visible events
        hold, so nobody types internal names. The API keeps plain exact-match strings."""
        events = self.queryset.order_by()
        actions = events.values_list("action", flat=True).distinct().order_by("action")
        types = events.values_list("object_type", flat=True).distinct().order_by("object_type")
        fields = self.form.fields
        fields["action"].widget = forms.Select(choices=[("", "any action"), *_same(actions)])
        labelled = [(name, object_type_label(name)) for name in types if name]
        fields["object_type"].widget = forms.Select(choices=[("", "any object"), *labelled])


def _same(values) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


def object_type_label(object_type: str) -> str:
    """`decisions.decisionrecord` as "Decision record"; the raw name for a model gone since."""
    try:
        model = apps.get_model(object_type)
    except (LookupError, ValueError):
        return object_type
    return str(model._meta.verbose_name).capitalize()
