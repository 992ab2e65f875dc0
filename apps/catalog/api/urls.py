"""Catalog API routes: `register_routes` adds the viewsets to the API router; `urlpatterns`
holds the matrix import and export under /api/v1/catalog/."""

from django.urls import path
from rest_framework.routers import BaseRouter

from apps.catalog.api import views

ROUTES = (
    ("engines", views.EngineViewSet, "catalog-engine"),
    ("releases", views.EngineReleaseViewSet, "catalog-release"),
    ("backends", views.KernelBackendViewSet, "catalog-backend"),
    ("accelerators", views.AcceleratorViewSet, "catalog-accelerator"),
    ("models", views.ModelSpecViewSet, "catalog-model"),
    ("features", views.FeatureViewSet, "catalog-feature"),
    ("capabilities", views.CapabilityViewSet, "catalog-capability"),
)


def register_routes(router: BaseRouter) -> None:
    for prefix, viewset, basename in ROUTES:
        router.register(f"catalog/{prefix}", viewset, basename=basename)


urlpatterns = [
    path("matrix/export/", views.MatrixExportView.as_view(), name="catalog-matrix-export"),
    path("matrix/import/", views.MatrixImportView.as_view(), name="catalog-matrix-import"),
]
