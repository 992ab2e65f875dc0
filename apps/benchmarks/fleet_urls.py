from django.urls import path

from apps.benchmarks import fleet_views as views

app_name = "runners"

urlpatterns = [
    path("", views.runner_list, name="list"),
    path("enroll/", views.enroll, name="enroll"),
    path("<int:runner_id>/", views.runner_detail, name="detail"),
    path("<int:runner_id>/rotate/", views.runner_rotate, name="rotate"),
    path("<int:runner_id>/revoke/", views.runner_revoke, name="revoke"),
]
