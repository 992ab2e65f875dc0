from django.apps import AppConfig


class SelectionsConfig(AppConfig):
    name = "apps.selections"
    label = "selections"
    verbose_name = "Selections"
