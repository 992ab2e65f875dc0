from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0002_fit_curated_fixtures"),
    ]

    operations = [
        migrations.AddField(
            model_name="kernelbackend",
            name="attention_kinds",
            field=models.JSONField(
                blank=True, default=list, help_text='Attention kinds served, e.g. ["mla"].'
            ),
        ),
        migrations.AddField(
            model_name="kernelbackend",
            name="precisions",
            field=models.JSONField(
                blank=True, default=list, help_text='Weight formats served, e.g. ["prec_fp8"].'
            ),
        ),
        migrations.AddField(
            model_name="kernelbackend",
            name="families",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='Accelerator families, e.g. ["hopper"]; empty: any.',
            ),
        ),
        migrations.AddField(
            model_name="kernelbackend",
            name="applicability_source",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="kernelbackend",
            name="applicability_as_of",
            field=models.DateField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="kernelbackend",
            name="applicability_note",
            field=models.TextField(blank=True),
        ),
    ]
