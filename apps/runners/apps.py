from django.apps import AppConfig


class RunnersConfig(AppConfig):
    name = "apps.runners"
    label = "runners"
    verbose_name = "Runners"

    def ready(self) -> None:
        from apps.core.metrics import register_collector
        from apps.runners import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from apps.runners.selectors import runner_metrics

        register_collector(runner_metrics)
