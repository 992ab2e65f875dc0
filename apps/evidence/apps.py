from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "apps.evidence"
    label = "evidence"
    verbose_name = "Evidence"

    def ready(self) -> None:
        from apps.evidence import receivers

        receivers.connect()
