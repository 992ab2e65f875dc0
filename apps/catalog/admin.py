"""The Django admin for curators; every save and delete goes through the catalog services, so
admin edits are validated like page edits and leave the same audit events."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models

from apps.audit.services import Actor
from apps.catalog import services
from apps.catalog.forms import CapabilityForm
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


class AuditedAdmin(admin.ModelAdmin):
    """Staff are the curators: they edit the catalog without per-model permissions. Deleting is
    left to cells, since removing an engine or release cascades without an event per cell."""

    def has_module_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self.model is Capability and self.has_module_permission(request)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if isinstance(db_field, models.URLField):
            kwargs["assume_scheme"] = "https"
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change: bool) -> None:
        actor = Actor.for_user(request.user)
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            saved = services.entry_update(actor=actor, instance=obj, changes=changes)
        else:
            saved = services.entry_create(actor=actor, model=type(obj), values=form.cleaned_data)
        obj.pk = saved.pk

    def delete_model(self, request, obj) -> None:
        services.entry_delete(actor=Actor.for_user(request.user), instance=obj)

    def delete_queryset(self, request, queryset: Any) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


@admin.register(Engine)
class EngineAdmin(AuditedAdmin):
    list_display = ["name", "slug", "kind", "status", "licence"]
    list_filter = ["kind", "status"]
    search_fields = ["name", "slug"]


@admin.register(EngineRelease)
class EngineReleaseAdmin(AuditedAdmin):
    list_display = ["engine", "version", "release_date", "needs_review"]
    list_filter = ["engine__kind", "needs_review"]
    search_fields = ["engine__name", "version"]
    list_select_related = ["engine"]


@admin.register(KernelBackend)
class KernelBackendAdmin(AuditedAdmin):
    list_display = ["name", "slug"]
    search_fields = ["name", "slug"]


@admin.register(ReleaseBackend)
class ReleaseBackendAdmin(AuditedAdmin):
    list_display = ["release", "backend", "vendors", "is_default"]
    list_select_related = ["release__engine", "backend"]


@admin.register(Accelerator)
class AcceleratorAdmin(AuditedAdmin):
    list_display = ["name", "vendor", "family", "memory_gb", "bandwidth_tbps", "bf16_tflops"]
    list_filter = ["vendor"]
    search_fields = ["name", "slug"]


@admin.register(ModelSpec)
class ModelSpecAdmin(AuditedAdmin):
    list_display = ["name", "family", "architecture", "params_total_b", "attention_kind"]
    list_filter = ["family", "attention_kind"]
    search_fields = ["name", "slug"]


@admin.register(Feature)
class FeatureAdmin(AuditedAdmin):
    list_display = ["key", "name", "contract"]
    list_filter = ["contract"]
    search_fields = ["key", "name"]


@admin.register(Capability)
class CapabilityAdmin(AuditedAdmin):
    """Uses the page's form, so a maturity change without new evidence is a form error here too."""

    form = CapabilityForm
    list_display = ["release", "feature", "backend", "vendor", "maturity", "as_of", "needs_review"]
    list_filter = ["maturity", "feature__contract", "release__engine", "needs_review"]
    search_fields = ["feature__key", "release__engine__name", "note"]
    list_select_related = ["release__engine", "feature", "backend"]
    autocomplete_fields = ["feature"]
