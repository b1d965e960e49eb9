"""AnalyzedApp.failure: why a failed app (or a job of it) failed, typed by analyzer.schema.Failure (issue 14)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("analyzer", "0013_stage_host_task_times"),
    ]

    operations = [
        migrations.AddField(
            model_name="analyzedapp",
            name="failure",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
