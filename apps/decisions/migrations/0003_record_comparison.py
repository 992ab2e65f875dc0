from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("decisions", "0002_record_simulation_only"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisionrecord",
            name="comparison",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="{reference_key, quality_tolerance, candidates: [{candidate_key, quality}], "
                "checklist, missed}: quality flags and the fair-comparison checklist.",
            ),
        ),
    ]
