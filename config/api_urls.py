"""The user-facing REST API (/api/v1/): one router whose root is the API's index."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from apps.audit.api.views import AuditEventViewSet
from apps.benchmarks.api.views import JobViewSet, PlanViewSet
from apps.catalog.api.urls import register_routes as register_catalog_routes
from apps.decisions.api.views import DecisionViewSet
from apps.evidence.api.urls import urlpatterns as evidence_routes
from apps.runners.api.user_views import RunnerViewSet
from apps.selections.api.views import EstimateView, SelectionViewSet

router = DefaultRouter()
router.register("audit/events", AuditEventViewSet, basename="audit-event")
register_catalog_routes(router)
router.register("selections", SelectionViewSet, basename="selection")
router.register("runners", RunnerViewSet, basename="runner")
router.register("benchmarks/plans", PlanViewSet, basename="benchmark-plan")
router.register("benchmarks/jobs", JobViewSet, basename="benchmark-job")
router.register("decisions", DecisionViewSet, basename="decision")

urlpatterns = [
    *evidence_routes,  # before the router, so selections/{id}/evidence/ is not a selection route
    path("estimate/", EstimateView.as_view(), name="estimate"),
    path("catalog/", include("apps.catalog.api.urls")),
    *router.urls,
]
