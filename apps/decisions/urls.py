from django.urls import path

from apps.decisions import views

app_name = "decisions"

urlpatterns = [
    path("", views.record_list, name="list"),
    path("new/", views.record_create, name="create"),
    path("<int:record_id>/", views.record_detail, name="detail"),
    path("<int:record_id>/edit/", views.record_edit, name="edit"),
    path("<int:record_id>/print/", views.record_print, name="print"),
    path("<int:record_id>/markdown/", views.record_markdown_download, name="markdown"),
    path("<int:record_id>/propose/", views.record_propose, name="propose"),
    path("<int:record_id>/accept/", views.record_accept, name="accept"),
    path("<int:record_id>/reject/", views.record_reject, name="reject"),
    path("<int:record_id>/deprecate/", views.record_deprecate, name="deprecate"),
    path("<int:record_id>/supersede/", views.record_supersede, name="supersede"),
    path(
        "<int:record_id>/triggers/<int:trigger_id>/plan/", views.trigger_plan, name="trigger-plan"
    ),
    path(
        "<int:record_id>/triggers/<int:trigger_id>/acknowledge/",
        views.trigger_acknowledge,
        name="trigger-acknowledge",
    ),
]
