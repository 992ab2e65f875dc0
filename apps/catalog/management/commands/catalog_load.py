from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.audit.services import Actor
from apps.catalog.loading import FIXTURE_DIR, catalog_load


class Command(BaseCommand):
    help = "Load the curated catalog (fixtures/catalog/*.json); loading twice changes nothing."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--fixture-dir", default=str(FIXTURE_DIR))

    def handle(self, *args, **options) -> None:
        try:
            report = catalog_load(
                actor=Actor.system("catalog_load"), fixture_dir=Path(options["fixture_dir"])
            )
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["verbosity"] < 1:
            return
        if not report.changed_anything:
            self.stdout.write("Catalog already up to date: nothing changed.")
            return
        for label, counts in (("created", report.created), ("updated", report.updated)):
            if counts:
                summary = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
                self.stdout.write(f"Catalog {label}: {summary}.")
