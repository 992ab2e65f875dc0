"""/api/runner/v1/: the runner-facing API, authenticated by runner credential only.

Enrollment and probes are the runners app's views; the attempt operations are this app's.
"""

from django.urls import path

from apps.benchmarks.api import runner_views as attempts
from apps.runners.api import views as runners

app_name = "runner-api"

urlpatterns = [
    path("enroll", runners.EnrollView.as_view(), name="enroll"),
    path("probe", runners.ProbeView.as_view(), name="probe"),
    path("heartbeat", attempts.HeartbeatView.as_view(), name="heartbeat"),
    path("attempts/<int:attempt_id>/claim", attempts.ClaimView.as_view(), name="claim"),
    path("attempts/<int:attempt_id>/spec", attempts.SpecView.as_view(), name="spec"),
    path("attempts/<int:attempt_id>/progress", attempts.ProgressView.as_view(), name="progress"),
    path("attempts/<int:attempt_id>/log", attempts.LogView.as_view(), name="log"),
    path("attempts/<int:attempt_id>/results", attempts.ResultsView.as_view(), name="results"),
    path("attempts/<int:attempt_id>/quality", attempts.QualityView.as_view(), name="quality"),
    path("attempts/<int:attempt_id>/finish", attempts.FinishView.as_view(), name="finish"),
]
