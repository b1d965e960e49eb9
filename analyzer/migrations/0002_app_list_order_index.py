"""PostgreSQL only: an index matching the app list's order (end time descending, never-ended apps last).

SQLite cannot create an index with NULLS LAST; it keeps the plain end-time index from 0001.
"""

from django.db import migrations

INDEX = "app_end_nulls_last_idx"


def create_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON analyzer_analyzedapp (end_time DESC NULLS LAST, id DESC)"
        )


def drop_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("analyzer", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
