from django.urls import path

from apps.selections import views

app_name = "selections"

urlpatterns = [
    path("", views.selection_list, name="list"),
    path("new/", views.goal_edit, name="create"),
    path("<int:selection_id>/", views.selection_detail, name="detail"),
    path("<int:selection_id>/goal/", views.goal_edit, name="edit"),
    path("<int:selection_id>/traces/", views.trace_upload, name="trace-upload"),
    path("<int:selection_id>/candidates/", views.candidate_list, name="candidates"),
    path(
        "<int:selection_id>/candidates/compute/",
        views.candidates_compute,
        name="candidates-compute",
    ),
    path(
        "<int:selection_id>/candidates/status/",
        views.computation_status,
        name="status",
    ),
    path("<int:selection_id>/archive/", views.selection_archive, name="archive"),
    path("<int:selection_id>/plan/", views.plan, name="plan"),
    path("<int:selection_id>/compare/", views.compare, name="compare"),
]
