"""Indexes for search, app detail and the CI gate on a million apps (benchmarks/bench_web.py, docs/benchmarks/web.md).

Portable (also in the models' Meta.indexes):

* ``app_id_upper_idx``: ``UPPER(app_id)``, for the case-insensitive exact match of an app id with either prefix
  (``selectors.app_id_exact``: the API detail and the gate), which otherwise reads every row;
* ``heuristic_code_sev_app_idx``: (code, severity, app), the per-heuristic severity filter (``heuristic=`` and
  ``severity_min=``) read from the findings' side, index only; it replaces (code, severity), its prefix.

PostgreSQL only (SQLite can index neither NULLS LAST nor trigrams), made here as 0002 made the list's own index:

* every list sorts ``<key> DESC NULLS LAST, id DESC``; a plain ``(user, -end_time)`` index sorts NULLS FIRST and
  cannot serve that order, so a busy user's, queue's or cluster's first page sorted all of its apps. These indexes
  end in the list's exact order, so the first page is the first 51 entries of one index range;
* the other sort keys of the list (``ordering=-score`` and the like) get the same, descending, for the unfiltered
  list;
* ``pg_trgm`` GIN indexes on ``UPPER(name)`` and ``UPPER(app_id)`` serve ``name=`` / ``app_id=`` fragments and the
  search box (``icontains`` is ``UPPER(x) LIKE UPPER('%...%')`` in Django), which otherwise read every row.
"""

from django.db import migrations, models
from django.db.models.functions import Upper

ORDER = "end_time DESC NULLS LAST, id DESC"
POSTGRESQL_INDEXES = {
    "app_user_end_nl_idx": f'("user", {ORDER})',
    "app_queue_end_nl_idx": f"(queue, {ORDER})",
    "app_cluster_end_nl_idx": f"(cluster_id, {ORDER})",
    "app_flow_def_end_nl_idx": f"(flow_def_id, {ORDER})",
    "app_job_type_end_nl_idx": f"(job_type, app_type, {ORDER})",
    "app_start_nl_idx": "(start_time DESC NULLS LAST, id DESC)",
    "app_score_nl_idx": "(score DESC NULLS LAST, id DESC)",
    "app_severity_nl_idx": "(severity DESC NULLS LAST, id DESC)",
    "app_runtime_nl_idx": "(runtime_ms DESC NULLS LAST, id DESC)",
    "app_wasted_nl_idx": "(wasted_gb_hours DESC NULLS LAST, id DESC)",
    "app_name_trgm_idx": "USING gin (UPPER(name) gin_trgm_ops)",
    "app_id_trgm_idx": "USING gin (UPPER(app_id) gin_trgm_ops)",
}


def create_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        # pg_trgm is a trusted extension (PostgreSQL 13+): the database owner may create it. Not dropped on the way
        # back: other objects may use it. (Django's TrigramExtension would drop it, and fails to reverse on SQLite.)
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        for name, definition in POSTGRESQL_INDEXES.items():
            schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON analyzer_analyzedapp {definition}")


def drop_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        for name in POSTGRESQL_INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("analyzer", "0009_stage_task_duration_histogram")]

    operations = [
        migrations.AddIndex(
            model_name="analyzedapp",
            index=models.Index(Upper("app_id"), name="app_id_upper_idx"),
        ),
        migrations.AddIndex(
            model_name="heuristicresult",
            index=models.Index(fields=["code", "severity", "app"], name="heuristic_code_sev_app_idx"),
        ),
        migrations.RemoveIndex(model_name="heuristicresult", name="heuristic_code_severity_idx"),  # its prefix
        migrations.RunPython(create_indexes, drop_indexes),
    ]
