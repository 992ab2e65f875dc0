from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

# Loader commands of the curated data, in dependency order, with their options; an app adds its
# own here. The published sample ships inside an optional wheel: without it, its loader says so
# and the rest still loads.
CURATED_LOADERS = (
    ("catalog_load", {}),
    ("published_import", {"if_available": True}),
)


class Command(BaseCommand):
    help = "Load every curated fixture set whose app is installed (safe to run again)."

    def handle(self, *args, **options) -> None:
        available = get_commands()
        for loader, loader_options in CURATED_LOADERS:
            if loader in available:
                call_command(loader, stdout=self.stdout, stderr=self.stderr, **loader_options)
