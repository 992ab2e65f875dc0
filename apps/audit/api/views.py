from rest_framework import viewsets

from apps.audit.api.serializers import AuditEventSerializer
from apps.audit.filters import AuditEventFilter
from apps.audit.selectors import audit_events_visible_to
from apps.core.request_context import request_team


class AuditEventViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit trail: the acting team's events (staff see all), newest first."""

    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter

    def get_queryset(self):
        return audit_events_visible_to(user=self.request.user, team=request_team(self.request))
