from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

# Loader commands of the curated data, in dependency order; an app adds its own here.
CURATED_LOADERS = ("catalog_load",)


class Command(BaseCommand):
    help = "Load every curated fixture set whose app is installed (safe to run again)."

    def handle(self, *args, **options) -> None:
        available = get_commands()
        for loader in CURATED_LOADERS:
            if loader in available:
                call_command(loader, stdout=self.stdout, stderr=self.stderr)
