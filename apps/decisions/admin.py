"""Read-only admin: records change only through the services, which audit every change."""

from django.contrib import admin

from apps.decisions.models import DecisionRecord, RetestTrigger


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(DecisionRecord)
class DecisionRecordAdmin(ReadOnlyAdmin):
    list_display = ["reference", "title", "team", "status", "retest_needed", "created_at"]
    list_filter = ["status", "retest_needed", "team"]
    search_fields = ["title"]


@admin.register(RetestTrigger)
class RetestTriggerAdmin(ReadOnlyAdmin):
    list_display = ["record", "kind", "changed_field", "fired_at", "plan"]
    list_filter = ["kind"]
