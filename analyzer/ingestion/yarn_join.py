"""The ResourceManager's view of each app (queue, resources, memory and vcore seconds, final status), joined in.

A cluster's yarn-rm source lists finished apps with what the RM knows of them; its History Server or event-log
directory sources fetch the same apps, usually a little later (the History Server's update interval) and
sometimes earlier. So the view is kept per (cluster, app id) in ``YarnAppView`` and joined both ways: when a
view is recorded, into the apps of that cluster already analyzed; when an app is stored, from the view already
recorded. A Spark app's attempts share one YARN application, so every attempt gets the same view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from analyzer.models import AnalyzedApp, Cluster, YarnAppView
from fetchers.backends import AppRef
from fetchers.yarn_rm import rm_app_summary


def views_record(cluster: Cluster, refs: Sequence[AppRef]) -> int:
    """Keeps the RM's view of each listed app and joins it into that cluster's stored attempts; the number kept."""
    views = {ref.app_id[:255]: (rm_app_summary(ref.extra), ref.finished_ms) for ref in refs}
    if not views:
        return 0
    with transaction.atomic():
        YarnAppView.objects.bulk_create(
            [
                YarnAppView(cluster=cluster, app_id=app_id, view=view, finished_ms=finished)
                for app_id, (view, finished) in views.items()
            ],
            update_conflicts=True,
            unique_fields=["cluster", "app_id"],
            update_fields=["view", "finished_ms", "recorded_at"],
        )
        stored = AnalyzedApp.objects.filter(cluster=cluster, app_id__in=list(views)).values_list("pk", "app_id")
        for pk, app_id in stored:
            AnalyzedApp.objects.filter(pk=pk).update(**joined_fields(views[app_id][0]))
    return len(views)


def view_for(cluster: Cluster | None, app_id: str) -> dict[str, Any]:
    """The recorded RM view of ``app_id`` on ``cluster``; {} when there is none."""
    if cluster is None:
        return {}
    view = YarnAppView.objects.filter(cluster=cluster, app_id=app_id[:255]).values_list("view", flat=True).first()
    return dict(view) if isinstance(view, dict) else {}


def joined_fields(view: dict[str, Any]) -> dict[str, Any]:
    """The ``AnalyzedApp`` fields a view sets: ``yarn``, and ``queue`` when the RM names one.

    The RM's queue wins over ``spark.yarn.queue``: that is only what was asked, and placement rules may move it.
    """
    fields: dict[str, Any] = {"yarn": view}
    rm_queue = view.get("queue")
    if isinstance(rm_queue, str) and rm_queue:
        fields["queue"] = rm_queue[:255]
    return fields
