"""Stage anomaly localization in the product (issue 7), read side: stored results, the templates of a history,
the runs localization reads and whether newer runs exist.

Returns model rows and typed records: a row's JSON decoded as ``analyzer.stages.schema`` (an older row's missing
keys take their defaults; one that does not decode raises ``UnreadableResult``, logged). ``webui.presenters.stages``
says them in words. The write side is ``analyzer.stages.services``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet

from analyzer.models import AnalyzedApp, StageLocalization
from analyzer.stages import schema
from analyzer.stored_results import decode

SUCCEEDED = "SUCCEEDED"
WHAT = "stage localization"


@dataclass(frozen=True, slots=True)
class LocalizationSettings:
    """The library's thresholds and the service's bounds (config/settings/base.py, HINDSIGHT_STAGE_LOCALIZATION_*)."""

    alpha: float
    beta: float
    min_runs: int
    min_effect: float
    max_runs: int
    per_call: int
    host_factor: float


def localization_settings() -> LocalizationSettings:
    """The ``HINDSIGHT_STAGE_LOCALIZATION_*`` settings; the library's own default where a threshold is not set."""
    from analysis.stages.localize import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_MIN_EFFECT, DEFAULT_MIN_RUNS

    def threshold(name: str, default: float) -> float:
        value = getattr(settings, f"HINDSIGHT_STAGE_LOCALIZATION_{name}")
        return float(default if value is None else value)

    return LocalizationSettings(
        alpha=threshold("ALPHA", DEFAULT_ALPHA),
        beta=threshold("BETA", DEFAULT_BETA),
        min_runs=max(2, int(threshold("MIN_RUNS", DEFAULT_MIN_RUNS))),
        min_effect=threshold("MIN_EFFECT", DEFAULT_MIN_EFFECT),
        max_runs=max(2, int(settings.HINDSIGHT_STAGE_LOCALIZATION_MAX_RUNS)),
        per_call=max(1, int(settings.HINDSIGHT_STAGE_LOCALIZATION_PER_CALL)),
        host_factor=max(1.0, float(settings.HINDSIGHT_STAGE_LOCALIZATION_HOST_FACTOR)),
    )


def qualifying_runs() -> QuerySet[AnalyzedApp]:
    """The apps localization reads: of a template, ended, ``SUCCEEDED`` and complete (not ``partial``)."""
    return AnalyzedApp.objects.exclude(template="").filter(status=SUCCEEDED, partial=False, end_time__isnull=False)


@dataclass(frozen=True)
class StoredLocalization:
    """A stored result and the newest end of the qualifying runs of its (template, cluster): newer than the
    result's ``latest_end`` means runs arrived since it was computed."""

    row: StageLocalization
    newest_end: dt.datetime | None


@dataclass(frozen=True)
class Localization:
    """A stored result's JSON, decoded."""

    result: schema.LocalizationResult
    runs: dict[str, schema.Run]  # run id -> the stored app it names


def localization_of(row: StageLocalization) -> Localization:
    """``row``'s result and runs; ``UnreadableResult`` when they do not decode."""
    return Localization(
        result=decode(row.result, schema.LocalizationResult, what=WHAT, row=row),
        runs=decode(row.runs, dict[str, schema.Run], what=WHAT, row=row),
    )


def stored_localizations(*, templates: Sequence[str], cluster: str = "") -> list[StageLocalization]:
    """The stored results of ``templates`` (of the cluster named ``cluster``; "" any cluster), by template."""
    wanted = [t for t in dict.fromkeys(templates) if t]
    if not wanted:
        return []
    rows = StageLocalization.objects.filter(template__in=wanted).select_related("cluster")
    if cluster:
        rows = rows.filter(cluster__name=cluster)
    order = {t: i for i, t in enumerate(wanted)}
    return sorted(rows, key=lambda s: (order[s.template], s.cluster.name if s.cluster else ""))


def templates_of(*, job_def_id: str = "", flow_def_id: str = "", cluster: str = "", limit: int = 50) -> list[str]:
    """The templates of a job definition's or a flow definition's apps (most recently run first)."""
    if job_def_id:
        apps = AnalyzedApp.objects.filter(job_def_id=job_def_id)
    elif flow_def_id:
        apps = AnalyzedApp.objects.filter(flow_def_id=flow_def_id)
    else:
        return []
    if cluster:
        apps = apps.filter(cluster__name=cluster)
    rows = apps.exclude(template="").order_by().values("template").annotate(last=Max("end_time"))
    ordered = sorted(
        rows, key=lambda r: (r["last"] is None, -(r["last"].timestamp() if r["last"] else 0), r["template"])
    )
    return [r["template"] for r in ordered[:limit]]


def templates_for_history(by: str, value: str, cluster: str = "") -> list[str]:
    """The templates a history shows runs of: the template itself, or a job's or a flow's templates."""
    if by == "template":
        return [value] if value else []
    if by == "job_def_id":
        return templates_of(job_def_id=value, cluster=cluster)
    if by == "flow_def_id":
        return templates_of(flow_def_id=value, cluster=cluster)
    return []


def qualifying_run_counts(*, templates: Sequence[str], cluster: str = "") -> dict[str, int]:
    """Runs per template that localization would read (ended, succeeded, complete), for the empty state."""
    apps = qualifying_runs().filter(template__in=list(templates))
    if cluster:
        apps = apps.filter(cluster__name=cluster)
    return {r["template"]: r["n"] for r in apps.order_by().values("template").annotate(n=Count("id"))}


def _newest_ends(rows: Sequence[StageLocalization]) -> dict[tuple[str, int | None], dt.datetime]:
    if not rows:
        return {}
    condition = Q()
    for row in rows:
        condition |= (
            Q(template=row.template, cluster_id=row.cluster_id)
            if row.cluster_id
            else Q(template=row.template, cluster__isnull=True)
        )
    grouped = (
        qualifying_runs().filter(condition).order_by().values("template", "cluster_id").annotate(newest=Max("end_time"))
    )
    return {(g["template"], g["cluster_id"]): g["newest"] for g in grouped}


def stored_with_newest_ends(*, templates: Sequence[str], cluster: str = "") -> list[StoredLocalization]:
    """:func:`stored_localizations` of ``templates``, each with the newest end of its qualifying runs."""
    rows = stored_localizations(templates=templates, cluster=cluster)
    newest = _newest_ends(rows)
    return [StoredLocalization(row=row, newest_end=newest.get((row.template, row.cluster_id))) for row in rows]
