from django.apps import AppConfig


class DecisionsConfig(AppConfig):
    name = "apps.decisions"
    label = "decisions"
    verbose_name = "Decisions"

    def ready(self) -> None:
        from apps.decisions import triggers

        triggers.connect()
