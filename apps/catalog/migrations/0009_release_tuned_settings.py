from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0008_published_measurements"),
    ]

    operations = [
        migrations.AddField(
            model_name="enginerelease",
            name="tuned_settings",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Settings the engine's own documentation recommends per workload class: "
                '[{"workload_class", "settings", "engine_flags", "source", "as_of", "note"}] '
                "(stackselect_domain/tuning.py).",
            ),
        ),
    ]
