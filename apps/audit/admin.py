from django.contrib import admin

from apps.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the table is append-only in the database too."""

    list_display = ["id", "occurred_at", "actor_name", "action", "object_type", "object_id", "team"]
    list_filter = ["action", "object_type", "actor_type"]
    search_fields = ["object_repr", "actor_name", "request_id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
