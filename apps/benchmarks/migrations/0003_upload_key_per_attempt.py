"""Idempotency keys are unique per attempt, no longer across every team's uploads."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("benchmarks", "0002_plan_run_mode")]

    operations = [
        migrations.AlterField(
            model_name="resultupload",
            name="idempotency_key",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="resultupload",
            constraint=models.UniqueConstraint(
                fields=("attempt", "idempotency_key"), name="one_upload_per_attempt_key"
            ),
        ),
    ]
