from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0005_prefix_cache_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="enginerelease",
            name="serves_engines",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='For orchestrators and KV layers: engine slugs they run on, e.g. ["vllm"].',
            ),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="serves_source",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="serves_as_of",
            field=models.DateField(blank=True, null=True),
        ),
    ]
