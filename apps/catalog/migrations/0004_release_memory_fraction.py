from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0003_kernel_applicability"),
    ]

    operations = [
        migrations.AddField(
            model_name="enginerelease",
            name="memory_fraction",
            field=models.FloatField(
                blank=True, help_text="The engine's default memory fraction, e.g. 0.9.", null=True
            ),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="memory_fraction_basis",
            field=models.CharField(
                blank=True,
                choices=[
                    ("total", "Share of all memory: weights, activations, KV (vLLM)"),
                    ("static", "Share of all memory: weights and KV pool (SGLang)"),
                    ("free", "Share of memory left after weights (TensorRT-LLM, LMDeploy)"),
                ],
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="memory_fraction_source",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="memory_fraction_as_of",
            field=models.DateField(blank=True, null=True),
        ),
    ]
