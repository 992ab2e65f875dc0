from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.audit.services import Actor
from apps.catalog import aiconfigurator_wheel, published_overview
from apps.catalog.published_overview import OverviewError, read_overview
from apps.catalog.published_sample import SOURCE_NAME, SampleError, read_sample
from apps.catalog.services import PublishedImportReport, published_import

ACTOR = Actor.system("published_import")


class Command(BaseCommand):
    help = (
        "Import the published measurements into the catalog: AIConfigurator's measurement "
        "sample (silicon_sample.csv, Apache-2.0) and the TensorRT-LLM performance overview's "
        "throughput tables (shipped in apps/catalog/data); importing twice changes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--file",
            help="A copy of silicon_sample.csv (default: the one in the installed wheel).",
        )
        parser.add_argument(
            "--if-available",
            action="store_true",
            help="Without the wheel and --file, say why the sample was not imported and go on.",
        )

    def handle(self, *args, **options) -> None:
        path = self._sample_path(options)
        try:
            with transaction.atomic():  # both sources or neither
                if path is not None:
                    report = published_import(actor=ACTOR, rows=read_sample(path))
                    self._report(SOURCE_NAME, report)
                self._import_overview()
        except (SampleError, OverviewError, ValueError) as error:
            raise CommandError(str(error)) from error

    def _sample_path(self, options) -> Path | None:
        if options["file"]:
            return Path(options["file"])
        if aiconfigurator_wheel.AVAILABLE:
            return aiconfigurator_wheel.sample_path()
        if options["if_available"]:
            self.stdout.write(
                f"{SOURCE_NAME}: not imported, {aiconfigurator_wheel.UNAVAILABLE_REASON}"
            )
            return None
        raise CommandError(
            f"{aiconfigurator_wheel.UNAVAILABLE_REASON}; pass --file with a copy of the sample"
        )

    def _import_overview(self) -> None:
        rows = read_overview()
        kept = [row for row in rows if row.representable]
        report = published_import(
            actor=ACTOR,
            rows=kept,
            source_name=published_overview.SOURCE_NAME,
            source_url=published_overview.SOURCE_URL,
            licence=published_overview.LICENCE,
            as_of=published_overview.SOURCE_AS_OF,
        )
        self._report(published_overview.SOURCE_NAME, report)
        skipped = Counter(row.unrepresentable_reason for row in rows if not row.representable)
        for reason, count in sorted(skipped.items()):
            self.stdout.write(f"  {count} cell(s) not imported: {reason}")

    def _report(self, source: str, report: PublishedImportReport) -> None:
        if not report.changed_anything:
            self.stdout.write(f"{source}: already up to date ({report.unchanged} rows).")
            return
        self.stdout.write(
            f"{source}: {report.created} created, {report.updated} updated, "
            f"{report.unchanged} unchanged."
        )
