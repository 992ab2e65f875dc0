"""A plan's run mode: measured (the default) or simulated, taken from existing identities."""

from django.db import migrations, models


def from_identity(apps, schema_editor):
    """Plans made before the mode existed were simulated exactly when their identity says so."""
    plans = apps.get_model("benchmarks", "BenchmarkPlan").objects
    plans.filter(identity__simulated=True).update(run_mode="simulated")


class Migration(migrations.Migration):
    dependencies = [("benchmarks", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="benchmarkplan",
            name="run_mode",
            field=models.CharField(
                choices=[
                    ("measured", "Measured on the stack's own engine"),
                    ("simulated", "Dry run on the simulated engine"),
                ],
                default="measured",
                help_text="measured: the stacks' own engines; simulated: a dry run (API: `mode`).",
                max_length=20,
            ),
        ),
        migrations.RunPython(from_identity, migrations.RunPython.noop),
    ]
