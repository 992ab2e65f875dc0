"""Read-mostly admin views for support staff; teams change selections through the app."""

from django.contrib import admin

from apps.selections.models import Candidate, Selection, WorkloadTrace


@admin.register(Selection)
class SelectionAdmin(admin.ModelAdmin):
    list_display = ["title", "team", "state", "model", "updated_at"]
    list_filter = ["state", "team"]
    search_fields = ["title"]
    readonly_fields = ["team", "created_by", "workload", "slo", "constraints", "custom_model"]


@admin.register(WorkloadTrace)
class WorkloadTraceAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "selection", "row_count", "uploaded_at"]
    readonly_fields = ["team", "selection", "uploaded_by", "sha256", "row_count", "summary"]
    exclude = ["rows"]


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ["__str__", "selection", "outcome", "rank", "score", "chosen"]
    list_filter = ["outcome"]
    list_select_related = ["selection"]
    raw_id_fields = ["selection", "release", "backend", "accelerator"]
