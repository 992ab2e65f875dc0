from django.urls import path

from apps.evidence import views

app_name = "evidence"

urlpatterns = [
    path("selections/<int:selection_id>/", views.selection_evidence, name="selection"),
    path("selections/<int:selection_id>/samples.csv", views.samples_csv, name="samples-csv"),
    path("selections/<int:selection_id>/summaries.csv", views.summaries_csv, name="summaries-csv"),
    path("selections/<int:selection_id>/import/", views.evidence_import, name="import"),
]
