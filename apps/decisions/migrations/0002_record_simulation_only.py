"""`simulation_only` on records, and the run mode in the evidence snapshots taken before it."""

from django.db import migrations, models


def add_run_modes(apps, schema_editor):
    """Each evidence entry gets its run's mode; an entry whose run is gone is left as it was."""
    records = apps.get_model("decisions", "DecisionRecord").objects
    runs = apps.get_model("evidence", "EvidenceRun").objects
    for record in records.exclude(evidence=[]).iterator():
        ids = [entry.get("run_id") for entry in record.evidence if "mode" not in entry]
        identities = dict(runs.filter(pk__in=ids).values_list("pk", "identity"))
        changed = False
        for entry in record.evidence:
            identity = identities.get(entry.get("run_id"))
            if "mode" not in entry and identity is not None:
                entry["mode"] = "simulated" if identity.get("simulated") else "measured"
                changed = True
        if changed:
            records.filter(pk=record.pk).update(evidence=record.evidence)


class Migration(migrations.Migration):
    dependencies = [
        ("decisions", "0001_initial"),
        ("evidence", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisionrecord",
            name="simulation_only",
            field=models.BooleanField(
                default=False,
                help_text="Set when proposing: the record rests on simulated evidence alone.",
            ),
        ),
        migrations.RunPython(add_run_modes, migrations.RunPython.noop),
    ]
