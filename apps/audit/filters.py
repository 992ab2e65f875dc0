"""One FilterSet for the audit page and the audit API."""

import django_filters

from apps.audit.models import AuditEvent


class AuditEventFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(
        field_name="actor_name", lookup_expr="icontains", label="Actor"
    )
    action = django_filters.CharFilter(lookup_expr="exact")
    object_type = django_filters.CharFilter(lookup_expr="exact", label="Object type")
    object_id = django_filters.CharFilter(lookup_expr="exact", label="Object id")
    occurred_after = django_filters.DateFilter(
        field_name="occurred_at", lookup_expr="date__gte", label="From (date)"
    )
    occurred_before = django_filters.DateFilter(
        field_name="occurred_at", lookup_expr="date__lte", label="To (date)"
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
