"""FilterSets shared by the catalog pages and the catalog API."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from apps.catalog.choices import (
    MATURITY_RANK,
    AttentionKind,
    Contract,
    EngineKind,
    Maturity,
    ProjectStatus,
    Vendor,
)
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
)
from apps.catalog.selectors import hardware_feature_prefix

REACHING_MATURITIES = [maturity for maturity, rank in MATURITY_RANK.items() if rank > 0]


class CapabilityFilter(django_filters.FilterSet):
    vendor = django_filters.ChoiceFilter(
        choices=Vendor.choices,
        method="filter_vendor",
        label="Accelerator vendor",
        help_text="Releases that reach this vendor's hardware, and the cells that hold on it.",
    )
    contract = django_filters.ChoiceFilter(field_name="feature__contract", choices=Contract.choices)
    maturity = django_filters.ChoiceFilter(choices=Maturity.choices)
    engine_kind = django_filters.ChoiceFilter(
        field_name="release__engine__kind", choices=EngineKind.choices, label="Engine kind"
    )
    engine = django_filters.CharFilter(field_name="release__engine__slug", label="Engine (slug)")
    release = django_filters.NumberFilter(field_name="release_id", label="Release id")
    feature = django_filters.CharFilter(field_name="feature__key", label="Feature key")
    backend = django_filters.CharFilter(field_name="backend__slug", label="Backend (slug)")
    needs_review = django_filters.BooleanFilter(label="Needs review")

    class Meta:
        model = Capability
        fields = [
            "vendor",
            "contract",
            "maturity",
            "engine_kind",
            "engine",
            "release",
            "feature",
            "backend",
            "needs_review",
        ]

    def filter_vendor(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """A release counts when a hardware-reach cell for the vendor is experimental or better;
        of its cells, those narrowed to another vendor are left out."""
        reaching = Capability.objects.filter(
            feature__key__startswith=hardware_feature_prefix(value),
            maturity__in=REACHING_MATURITIES,
        ).values("release_id")
        return queryset.filter(Q(vendor=value) | Q(vendor=""), release_id__in=reaching)


class EngineFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=EngineKind.choices)
    status = django_filters.ChoiceFilter(choices=ProjectStatus.choices)

    class Meta:
        model = Engine
        fields = ["kind", "status", "slug"]


class EngineReleaseFilter(django_filters.FilterSet):
    engine = django_filters.CharFilter(field_name="engine__slug", label="Engine (slug)")
    engine_kind = django_filters.ChoiceFilter(
        field_name="engine__kind", choices=EngineKind.choices, label="Engine kind"
    )

    class Meta:
        model = EngineRelease
        fields = ["engine", "engine_kind", "version", "needs_review"]


class KernelBackendFilter(django_filters.FilterSet):
    class Meta:
        model = KernelBackend
        fields = ["slug"]


class AcceleratorFilter(django_filters.FilterSet):
    vendor = django_filters.ChoiceFilter(choices=Vendor.choices)
    min_memory_gb = django_filters.NumberFilter(
        field_name="memory_gb", lookup_expr="gte", label="At least this memory (GB)"
    )

    class Meta:
        model = Accelerator
        fields = ["vendor", "family", "slug", "min_memory_gb"]


class ModelSpecFilter(django_filters.FilterSet):
    attention_kind = django_filters.ChoiceFilter(choices=AttentionKind.choices)
    moe = django_filters.BooleanFilter(
        field_name="experts_total", lookup_expr="isnull", exclude=True, label="Mixture of experts"
    )

    class Meta:
        model = ModelSpec
        fields = ["family", "architecture", "attention_kind", "moe", "slug"]


class FeatureFilter(django_filters.FilterSet):
    contract = django_filters.ChoiceFilter(choices=Contract.choices)

    class Meta:
        model = Feature
        fields = ["contract", "key"]
