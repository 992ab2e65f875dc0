"""Catalog API serializers. Uniqueness is checked by the services (model validation), which
also know the conditional constraints of capability cells, so the serializers skip it."""

from __future__ import annotations

from rest_framework import serializers

from apps.catalog.editable import (
    BACKEND_FIELDS,
    CAPABILITY_FIELDS,
    ENGINE_FIELDS,
    FEATURE_FIELDS,
    RELEASE_FIELDS,
)
from apps.catalog.interchange import FILE_FORMATS, VALUE_COLUMNS
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
    ReleaseBackend,
)


class EngineSerializer(serializers.ModelSerializer):
    class Meta:
        model = Engine
        fields = ["id", *ENGINE_FIELDS]


class ReleaseBackendSerializer(serializers.ModelSerializer):
    backend = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = ReleaseBackend
        fields = ["backend", "vendors", "is_default"]


class EngineReleaseSerializer(serializers.ModelSerializer):
    engine = serializers.SlugRelatedField(slug_field="slug", queryset=Engine.objects.all())
    backends = ReleaseBackendSerializer(many=True, read_only=True)
    # The documented settings per workload class, each with its source and as-of date; read
    # only here (the curated fixtures and imports write them).
    tuned_settings = serializers.JSONField(read_only=True)

    class Meta:
        model = EngineRelease
        fields = ["id", *RELEASE_FIELDS, "backends", "tuned_settings"]
        validators: list = []


class KernelBackendSerializer(serializers.ModelSerializer):
    class Meta:
        model = KernelBackend
        fields = ["id", *BACKEND_FIELDS]


class AcceleratorSerializer(serializers.ModelSerializer):
    class Meta:
        model = Accelerator
        fields = "__all__"


class ModelSpecSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelSpec
        fields = "__all__"


class FeatureSerializer(serializers.ModelSerializer):
    class Meta:
        model = Feature
        fields = ["id", *FEATURE_FIELDS]


class CapabilitySerializer(serializers.ModelSerializer):
    engine = serializers.CharField(source="release.engine.slug", read_only=True)
    version = serializers.CharField(source="release.version", read_only=True)
    feature = serializers.SlugRelatedField(slug_field="key", queryset=Feature.objects.all())
    backend = serializers.SlugRelatedField(
        slug_field="slug", queryset=KernelBackend.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = Capability
        fields = ["id", "engine", "version", *CAPABILITY_FIELDS]
        validators: list = []


class MatrixImportInputSerializer(serializers.Serializer):
    file = serializers.FileField()
    file_format = serializers.ChoiceField(choices=FILE_FORMATS)
    apply = serializers.BooleanField(
        default=False,
        help_text="false: dry run (only the diff); true: apply when every row is valid.",
    )


class CellKeySerializer(serializers.Serializer):
    engine = serializers.CharField()
    version = serializers.CharField()
    feature = serializers.CharField()
    backend = serializers.CharField()
    vendor = serializers.CharField()
    family = serializers.CharField()


class CellValuesSerializer(serializers.Serializer):
    maturity = serializers.CharField()
    note = serializers.CharField()
    evidence_url = serializers.CharField()
    as_of = serializers.DateField()
    verified_by = serializers.CharField()
    needs_review = serializers.BooleanField()


class CellChangeSerializer(serializers.Serializer):
    key = CellKeySerializer()
    before = CellValuesSerializer(allow_null=True)
    after = CellValuesSerializer(allow_null=True)
    changed_fields = serializers.ListField(child=serializers.ChoiceField(choices=VALUE_COLUMNS))


class RowErrorSerializer(serializers.Serializer):
    row = serializers.IntegerField(help_text="1 is the first row after the CSV header.")
    field = serializers.CharField()
    message = serializers.CharField()


class ImportPlanSerializer(serializers.Serializer):
    applied = serializers.BooleanField()
    rows = serializers.IntegerField()
    added = CellChangeSerializer(many=True)
    changed = CellChangeSerializer(many=True)
    removed = CellChangeSerializer(many=True)
    errors = RowErrorSerializer(many=True)
