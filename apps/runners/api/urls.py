"""/api/runner/v1/: the runner-facing API, authenticated by runner credential only."""

from django.urls import path

from apps.runners.api import views

app_name = "runner-api"

urlpatterns = [
    path("enroll", views.EnrollView.as_view(), name="enroll"),
    path("probe", views.ProbeView.as_view(), name="probe"),
    path("heartbeat", views.HeartbeatView.as_view(), name="heartbeat"),
    path("attempts/<int:attempt_id>/claim", views.ClaimView.as_view(), name="claim"),
    path("attempts/<int:attempt_id>/spec", views.SpecView.as_view(), name="spec"),
    path("attempts/<int:attempt_id>/progress", views.ProgressView.as_view(), name="progress"),
    path("attempts/<int:attempt_id>/log", views.LogView.as_view(), name="log"),
    path("attempts/<int:attempt_id>/results", views.ResultsView.as_view(), name="results"),
    path("attempts/<int:attempt_id>/finish", views.FinishView.as_view(), name="finish"),
]
