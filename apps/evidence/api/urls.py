"""Evidence routes of /api/v1/; config/api_urls.py lists them before the router's."""

from django.urls import path

from apps.evidence.api.views import ImportView, SelectionEvidenceView

urlpatterns = [
    path(
        "selections/<int:selection_id>/evidence/",
        SelectionEvidenceView.as_view(),
        name="selection-evidence",
    ),
    path("evidence/imports/", ImportView.as_view(), name="evidence-import"),
]
