from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.audit.services import Actor
from apps.catalog import aiconfigurator_wheel
from apps.catalog.published_sample import SOURCE_NAME, SampleError, read_sample
from apps.catalog.services import published_import


class Command(BaseCommand):
    help = (
        "Import AIConfigurator's published measurement sample (silicon_sample.csv, Apache-2.0) "
        "into the catalog; importing twice changes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--file",
            help="A copy of silicon_sample.csv (default: the one in the installed wheel).",
        )
        parser.add_argument(
            "--if-available",
            action="store_true",
            help="Without the wheel and --file, say why nothing was imported and exit 0.",
        )

    def handle(self, *args, **options) -> None:
        if options["file"]:
            path = Path(options["file"])
        elif aiconfigurator_wheel.AVAILABLE:
            path = aiconfigurator_wheel.sample_path()
        elif options["if_available"]:
            self.stdout.write(
                f"{SOURCE_NAME}: not imported, {aiconfigurator_wheel.UNAVAILABLE_REASON}"
            )
            return
        else:
            raise CommandError(
                f"{aiconfigurator_wheel.UNAVAILABLE_REASON}; pass --file with a copy of the sample"
            )
        try:
            rows = read_sample(path)
            report = published_import(actor=Actor.system("published_import"), rows=rows)
        except (SampleError, ValueError) as error:
            raise CommandError(str(error)) from error
        if not report.changed_anything:
            self.stdout.write(f"{SOURCE_NAME}: already up to date ({report.unchanged} rows).")
            return
        self.stdout.write(
            f"{SOURCE_NAME}: {report.created} created, {report.updated} updated, "
            f"{report.unchanged} unchanged."
        )
