import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks", "0003_upload_key_per_attempt"),
    ]

    operations = [
        migrations.AddField(
            model_name="benchmarkjob",
            name="tuning",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The tuning trial this job runs: {group, trial, settings, origin, source}.",
            ),
        ),
        migrations.AddField(
            model_name="benchmarkjob",
            name="quality",
            field=models.JSONField(
                blank=True,
                null=True,
                help_text="The job spec's quality section: the probe's prompts and sampling.",
            ),
        ),
        migrations.CreateModel(
            name="QualityResult",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("probe_set", models.CharField(max_length=60)),
                ("sampling", models.JSONField(default=dict)),
                ("outputs", models.JSONField(default=list, help_text="[{id, text, tool_calls, error, latency_s}]")),
                ("score", models.JSONField(default=dict, help_text="{correct, total, rate, mode}")),
                ("evaluation", models.JSONField(blank=True, null=True, help_text="A team's own evaluation command: {name, score, metric}.")),
                ("received_at", models.DateTimeField(auto_now=True)),
                ("attempt", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="quality", to="benchmarks.jobattempt")),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="quality_results", to="benchmarks.benchmarkjob")),
            ],
            options={"ordering": ["job", "attempt"]},
        ),
    ]
