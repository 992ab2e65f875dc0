from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0004_release_memory_fraction"),
    ]

    operations = [
        migrations.AlterField(
            model_name="enginerelease",
            name="prefix_cache_kind",
            field=models.CharField(
                blank=True,
                choices=[
                    ("hash_blocks", "Hashed KV blocks"),
                    ("radix_tree", "Radix tree"),
                    ("per_slot", "Per-slot prompt cache"),
                    ("none", "None"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="enginerelease",
            name="prefix_cache_default_on",
            field=models.BooleanField(
                blank=True,
                help_text="Whether prefix reuse is on without a flag; null: unknown.",
                null=True,
            ),
        ),
    ]
