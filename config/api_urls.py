"""The user-facing REST API (/api/v1/): one router whose root is the API's index."""

from rest_framework.routers import DefaultRouter

from apps.audit.api.views import AuditEventViewSet

router = DefaultRouter()
router.register("audit/events", AuditEventViewSet, basename="audit-event")

urlpatterns = router.urls
