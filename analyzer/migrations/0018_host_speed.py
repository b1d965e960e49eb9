"""Per app and host, the summed log ratio of task time to the sibling median (issue 16: stragglers are judged
against their hardware class by how many times slower they ran). Null for rows stored before it existed."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("analyzer", "0017_on_demand_waits")]

    operations = [
        migrations.AddField(
            model_name="apphosttasks",
            name="log_ratio_sum",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
