from django.apps import AppConfig


class DecisionsConfig(AppConfig):
    name = "apps.decisions"
    label = "decisions"
    verbose_name = "Decisions"
