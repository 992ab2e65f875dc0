"""Top-level URL map: pages per app, the user API under /api/v1/, the runner API under
/api/runner/v1/, operations endpoints."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("", include("apps.dashboard.urls")),
    path("", include("apps.core.urls")),
    path("accounts/", include("apps.accounts.urls")),
    path("audit/", include("apps.audit.urls")),
    path("runners/", include("apps.benchmarks.fleet_urls")),
    path("benchmarks/", include("apps.benchmarks.urls")),
    path("selections/", include("apps.selections.urls")),
    path("evidence/", include("apps.evidence.urls")),
    path("decisions/", include("apps.decisions.urls")),
    path("catalog/", include("apps.catalog.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("api/runner/v1/", include("apps.benchmarks.api.runner_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/schema/swagger/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api_docs.html"),
        name="api-docs",
    ),
]

handler404 = "apps.core.views.not_found"
