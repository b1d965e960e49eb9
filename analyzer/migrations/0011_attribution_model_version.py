"""Stored slowdown-attribution model versions (issue 6): facts, held-out MARE and the joblib-serialized model."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("analyzer", "0010_search_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="AttributionModelVersion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("format_version", models.PositiveIntegerField(default=1)),
                ("params", models.JSONField(default=dict)),
                ("features", models.JSONField(default=list)),
                ("window_days", models.PositiveIntegerField(blank=True, null=True)),
                ("window_start", models.DateTimeField(blank=True, null=True)),
                ("window_end", models.DateTimeField(blank=True, null=True)),
                ("mare", models.FloatField()),
                ("n_runs", models.PositiveIntegerField(default=0)),
                ("n_train", models.PositiveIntegerField(default=0)),
                ("n_holdout", models.PositiveIntegerField(default=0)),
                ("n_templates", models.PositiveIntegerField(default=0)),
                ("n_borrowed", models.PositiveIntegerField(default=0)),
                ("train_seconds", models.FloatField(default=0.0)),
                ("size_bytes", models.BigIntegerField(default=0)),
                ("confidence", models.JSONField(default=dict)),
                ("blob", models.BinaryField()),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
    ]
