from django.contrib import admin

from apps.evidence.models import EvidenceRun, LoadPointResult


class _ReadOnly(admin.ModelAdmin):
    """Evidence is written by ingest and import only; the admin is for looking."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(EvidenceRun)
class EvidenceRunAdmin(_ReadOnly):
    list_display = ["id", "team", "selection", "source", "tool", "tool_version", "created_at"]
    list_filter = ["source", "tool"]
    search_fields = ["identity_fingerprint"]


@admin.register(LoadPointResult)
class LoadPointResultAdmin(_ReadOnly):
    list_display = ["id", "run", "index", "chunk_count", "duration_s"]
