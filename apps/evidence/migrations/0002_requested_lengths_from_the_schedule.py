"""A runner's load points are judged against the mean lengths of the plan's own request
schedule (apps/evidence/ingest.py), no longer against the workload distribution's mean: this
rewrites the requested lengths of stored runner results and the two flags read from them."""

from django.db import migrations

# The tolerance the flags were computed with (apps/evidence/analysis.py), frozen here so the
# migration reads the same whatever that module later says.
LENGTH_TOLERANCE = 0.05


def _mean(requests, key):
    return sum(request[key] for request in requests) / len(requests)


def _off_target(achieved, requested):
    if achieved is None or requested is None:
        return None
    return abs(achieved - requested) > LENGTH_TOLERANCE * requested


def forwards(apps, schema_editor):
    LoadPointResult = apps.get_model("evidence", "LoadPointResult")
    results = LoadPointResult.objects.filter(
        run__source="runner", run__job__isnull=False
    ).select_related("run__job__plan")
    for result in results.iterator(chunk_size=500):
        requests = result.run.job.plan.requests or []
        isl, osl = (
            (_mean(requests, "input_tokens"), _mean(requests, "output_tokens"))
            if requests
            else (None, None)
        )
        summary = dict(result.summary or {})
        if summary:
            summary["isl_off_target"] = _off_target(summary.get("achieved_isl"), isl)
            summary["osl_off_target"] = _off_target(summary.get("achieved_osl"), osl)
        LoadPointResult.objects.filter(pk=result.pk).update(
            requested_isl=isl, requested_osl=osl, summary=summary
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evidence", "0001_initial"),
        ("benchmarks", "0004_quality_probe_and_tuning"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
