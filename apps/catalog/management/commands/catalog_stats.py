from django.core.management.base import BaseCommand

from apps.catalog.selectors import Share, catalog_stats, published_stats


def _share_line(label: str, share: Share) -> str:
    return f"{label}: {share.sourced} of {share.total} ({share.percent:.1f}%)"


class Command(BaseCommand):
    help = "Summarise the catalog: counts by kind and how much of it carries a source and as_of."

    def handle(self, *args, **options) -> None:
        stats = catalog_stats()
        self.stdout.write("Catalog counts")
        for label, count in stats.counts.items():
            self.stdout.write(f"  {label}: {count}")
        for title, counts in (
            ("Engines by kind", stats.engines_by_kind),
            ("Features by contract", stats.features_by_contract),
            ("Cells by maturity", stats.cells_by_maturity),
        ):
            summary = ", ".join(f"{name} {count}" for name, count in counts.items()) or "none"
            self.stdout.write(f"{title}: {summary}")
        self.stdout.write("Sources (a source and an as_of date)")
        for label, share in (
            ("cells with evidence URL and as_of", stats.cells),
            ("accelerator figures", stats.hardware_figures),
            ("model figures", stats.model_figures),
            ("release defaults", stats.release_defaults),
        ):
            self.stdout.write("  " + _share_line(label, share))
        self.stdout.write("Coverage of serving engines (a pair without a cell is not recorded)")
        for label, share in stats.coverage.items():
            self.stdout.write("  " + _share_line(label, share))
        published = published_stats()
        self.stdout.write(
            f"Published measurements: {published.stored} stored ({published.aggregated} "
            f"aggregated, {published.held_out} held out for accuracy figures)"
        )
        if published.sample is None:
            self.stdout.write(f"  sample rows representable: unknown ({published.sample_note})")
        else:
            self.stdout.write("  " + _share_line("sample rows representable", published.sample))
        self.stdout.write(
            "  " + _share_line("TensorRT-LLM overview cells representable", published.overview)
        )
