from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "apps.benchmarks"
    label = "benchmarks"
    verbose_name = "Benchmarks"

    def ready(self) -> None:
        from apps.benchmarks import receivers
        from apps.benchmarks.selectors import job_metrics
        from apps.core.metrics import register_collector

        register_collector(job_metrics)
        receivers.connect()
