from django.urls import path

from apps.audit import views

app_name = "audit"

urlpatterns = [
    path("", views.event_list, name="events"),
    path("events.csv", views.event_csv, name="events-csv"),
]
