from django.urls import path

from apps.benchmarks import views

app_name = "benchmarks"

urlpatterns = [
    path("", views.plan_list, name="list"),
    path("new/<int:selection_id>/", views.plan_create, name="plan-create"),
    path("<int:plan_id>/", views.plan_detail, name="plan-detail"),
    path("<int:plan_id>/progress.json", views.plan_progress_json, name="plan-progress"),
    path("<int:plan_id>/cancel/", views.plan_cancel, name="plan-cancel"),
    path("jobs/<int:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job-cancel"),
]
