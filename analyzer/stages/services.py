"""Stage anomaly localization in the product (issue 7), write side: which stage made a recurring job's runs slow.

For one (template, cluster) the service reads the latest ``HINDSIGHT_STAGE_LOCALIZATION_MAX_RUNS`` runs (default
200), builds the runs x stages frame of :func:`analysis.stages.localize.localize` and stores its result as the one
``StageLocalization`` of that pair, replacing the earlier one. What it decides:

* **Which runs.** Apps of the template on that cluster ("no cluster": apps read from files) that ended,
  ``SUCCEEDED`` and not ``partial``. A failed or cut-short run stopped somewhere in its DAG: its stages did not all
  run and its run time measures how far it got, not how slow it was (it usually has another signature anyway).
* **A stage's duration in a run** is the sum of ``duration_ms`` over the stage id's attempts: a stage that had to
  be retried (a lost shuffle, a failed attempt) cost the run all of its attempts' time, and that is a slowdown to
  localize. A stage without a duration (skipped, never completed) is missing in that run; the library drops a
  stage missing in some runs of a category. Columns are keyed by stage id; the label shows id and name.
* **Categories** are (template, signature) with ``AnalyzedApp.stage_signature`` (``analysis.stages.signature``);
  a run's time is its ``runtime_ms``.
* **Stored.** ``result`` is ``LocalizationResult.to_dict()``, each category also holding ``stage_names`` (stage id
  -> the name in the category's latest run); ``runs`` maps run ids (the app's pk as a string) to ``{pk, app_id,
  attempt_id, end}`` so pages and the API link runs without another query. ``latest_end`` is the newest run's end.
  Both are checked against ``analyzer.stages.schema`` before they are written (``analyzer.stored_results``).
* **Which hosts.** For each outlier run of an anomalous stage, the stage's ``StageSummary.host_task_times`` in that
  run (summed over the stage id's attempts, like its duration) names the hosts whose mean task time was at least
  ``HINDSIGHT_STAGE_LOCALIZATION_HOST_FACTOR`` (1.5) times the mean over the stage's other hosts *and* that factor
  times the host's usual ratio (its median in the category's runs where the stage was not the outlier): a host
  that is always slower did not make this run slow. No host named: the stage was slow on every host. Fewer than
  3 hosts (local mode: one) or no host information: nothing is said about hosts (:func:`host_findings`).
* **When.** :func:`localize_due`, hourly by beat: every pair with a qualifying run newer than its stored
  ``latest_end`` and at least ``HINDSIGHT_STAGE_LOCALIZATION_MIN_RUNS`` qualifying runs, oldest result first, at
  most ``HINDSIGHT_STAGE_LOCALIZATION_PER_CALL`` pairs a call (the rest on the next call).

Read side: ``analyzer.stages.selectors`` (stored results, the templates of a history, whether newer runs exist);
``webui.presenters.stages`` says them in words for the history page, the API and ``manage.py localize_stages``.
"""

from __future__ import annotations

import datetime as dt
import logging
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from analyzer.models import AnalyzedApp, Cluster, StageLocalization, StageSummary
from analyzer.schema import EMPTY_HOST_TASK_TIMES, HostTaskTimes
from analyzer.stages import schema
from analyzer.stages.selectors import LocalizationSettings, localization_settings, qualifying_runs
from analyzer.stored_results import UnreadableResult, decode, validated

log = logging.getLogger(__name__)


def _of_cluster(apps: QuerySet[AnalyzedApp], cluster: Cluster | None) -> QuerySet[AnalyzedApp]:
    return apps.filter(cluster=cluster) if cluster is not None else apps.filter(cluster__isnull=True)


def latest_runs(template: str, cluster: Cluster | None, limit: int) -> list[AnalyzedApp]:
    """The template's latest ``limit`` qualifying runs on ``cluster`` (None: apps read from files), newest first."""
    apps = _of_cluster(qualifying_runs().filter(template=template), cluster)
    fields = ("app_id", "attempt_id", "app_type", "template", "stage_signature", "end_time", "runtime_ms")
    return list(apps.only(*fields).order_by("-end_time", "-id")[:limit])


class _StoredStage(NamedTuple):
    stage_id: int
    attempt_id: int
    name: str


def runs_frame(apps: Sequence[AnalyzedApp]) -> tuple[Any, dict[str, dict[str, str]]]:
    """The library's runs x stages frame of ``apps`` and, per signature, stage id -> name (the latest run's).

    An app stored before signatures were computed ("") is signed here from its stored stage rows, the same way.
    """
    import pandas as pd  # type: ignore[import-untyped]

    from analysis.stages.signature import stage_signature

    durations: dict[int, dict[str, float]] = defaultdict(dict)
    names: dict[int, dict[str, str]] = defaultdict(dict)
    attempts = (
        StageSummary.objects.filter(app_id__in=[app.pk for app in apps])
        .order_by("app_id", "stage_id", "attempt_id")
        .values_list("app_id", "stage_id", "attempt_id", "name", "duration_ms")
    )
    for app_pk, stage_id, _attempt, name, duration_ms in attempts.iterator(chunk_size=5000):
        key = str(stage_id)
        names[app_pk].setdefault(key, name)  # the first attempt's name
        if duration_ms is not None and duration_ms >= 0:
            durations[app_pk][key] = durations[app_pk].get(key, 0.0) + float(duration_ms)
    rows = []
    stage_names: dict[str, dict[str, str]] = {}
    for app in apps:  # newest first: the first name seen per signature is the latest run's
        signature = app.stage_signature
        if not signature and names.get(app.pk):
            stored = [_StoredStage(int(key), 0, name) for key, name in names[app.pk].items()]
            signature = stage_signature(stored, app_type=app.app_type)
        per_signature = stage_names.setdefault(signature, {})
        for key, name in names.get(app.pk, {}).items():
            per_signature.setdefault(key, name)
        rows.append(
            {
                "template": app.template,
                "signature": signature,
                "run_id": str(app.pk),
                "run_time": float(app.runtime_ms) if app.runtime_ms is not None else float("nan"),
                **durations.get(app.pk, {}),
            }
        )
    frame = pd.DataFrame(rows)
    stage_columns = sorted(
        (c for c in frame.columns if c not in ("template", "signature", "run_id", "run_time")), key=int
    )
    return frame[["template", "signature", "run_id", "run_time", *stage_columns]], stage_names


def localize_template(
    template: str,
    cluster: Cluster | None,
    *,
    now: dt.datetime | None = None,
    config: LocalizationSettings | None = None,
) -> StageLocalization | None:
    """Localize the template's latest runs on ``cluster`` and store the result (replacing the earlier one).

    Stores whatever the runs allow, categories with too few runs saying so; None (nothing stored, an earlier
    result kept) when the template has no qualifying run at all.
    """
    from analysis.stages.localize import StageInputError, localize

    config = config or localization_settings()
    apps = latest_runs(template, cluster, config.max_runs)
    if not apps:
        return None
    frame, stage_names = runs_frame(apps)
    if frame.shape[1] <= 4:  # no stage columns: no app of the template has stage rows
        result: dict[str, Any] = {"params": _params(config), "categories": [], "ranking": []}
        result["reason"] = "no stage durations were stored for these runs"
    else:
        try:
            localized = localize(
                frame, alpha=config.alpha, beta=config.beta, min_runs=config.min_runs, min_effect=config.min_effect
            )
        except StageInputError as error:  # defensive: the frame is built here, but a message beats a crash
            result = {"params": _params(config), "categories": [], "ranking": [], "reason": str(error)}
        else:
            result = localized.to_dict()
    for category in result["categories"]:
        category["stage_names"] = stage_names.get(category["signature"], {})
    result.setdefault("params", {})["host_factor"] = config.host_factor
    _add_host_findings(result, frame, config.host_factor)
    runs = {
        str(app.pk): {
            "pk": app.pk,
            "app_id": app.app_id,
            "attempt_id": app.attempt_id,
            "end": app.end_time.isoformat() if app.end_time else None,
        }
        for app in apps
    }
    values = {
        "computed_at": now or timezone.now(),
        "latest_end": max(app.end_time for app in apps if app.end_time is not None),
        "n_runs": len(apps),
        "n_categories": len(result["categories"]),
        "n_anomalous": sum(1 for c in result["categories"] if any(s["anomalous"] for s in c["stages"])),
        "result": validated(result, schema.LocalizationResult),
        "runs": validated(runs, dict[str, schema.Run]),
    }
    for attempt in range(2):
        try:
            with transaction.atomic():
                stored, _created = StageLocalization.objects.update_or_create(
                    template=template, cluster=cluster, defaults=values
                )
            return stored
        except IntegrityError:  # another worker stored the same pair between our read and insert: update it
            if attempt:
                raise
    raise AssertionError("unreachable")


def _params(config: LocalizationSettings) -> dict[str, float | int]:
    return {"alpha": config.alpha, "beta": config.beta, "min_runs": config.min_runs, "min_effect": config.min_effect}


# --- which hosts: pure rules over stored host_task_times, then the service's one query ---------------------------

MIN_HOSTS = 3  # with two hosts "slower than the others" is one host against one: no fleet to stand out from

HostTimes = Mapping[str, Any] | HostTaskTimes  # stored (or summed) JSON, or already decoded


def host_times(times: Any, row: object = None) -> HostTaskTimes:
    """``times`` as :class:`analyzer.schema.HostTaskTimes`; no host information when it cannot be read (logged
    with ``row``, where it was stored)."""
    if isinstance(times, HostTaskTimes):
        return times
    try:
        return decode(times, HostTaskTimes, what="stage task times per host", row=row)
    except UnreadableResult:
        return EMPTY_HOST_TASK_TIMES


def summed_host_times(attempts: Iterable[Any]) -> dict[str, Any]:
    """One run's ``host_task_times`` of a stage summed over its attempts (as its duration is), ``{}`` if none.

    Each attempt keeps at most 16 hosts, so after a retry on a large cluster ``n_hosts`` is a lower bound. An
    attempt whose stored value cannot be read counts as one without host information.
    """
    n_hosts = n_tasks = task_ms = 0
    per_host: dict[str, list[int]] = {}
    for attempt in map(host_times, attempts):
        n_hosts = max(n_hosts, attempt.n_hosts)
        n_tasks += attempt.n_tasks
        task_ms += attempt.task_ms
        for host, tasks, ms in attempt.hosts:
            if tasks > 0 and ms >= 0:
                kept = per_host.setdefault(host, [0, 0])
                kept[0] += tasks
                kept[1] += ms
    if not per_host:
        return {}
    hosts = [[host, tasks, ms] for host, (tasks, ms) in per_host.items()]
    return {"n_hosts": max(n_hosts, len(hosts)), "n_tasks": n_tasks, "task_ms": task_ms, "hosts": hosts}


def host_ratios(times: HostTimes) -> dict[str, tuple[float, int]]:
    """Per listed host: (its mean task time / the mean of the stage's other tasks, its tasks); ``{}`` below 3 hosts."""
    typed = host_times(times)
    if typed.n_hosts < MIN_HOSTS:
        return {}
    ratios = {}
    for host, tasks, ms in typed.hosts:
        other_tasks, other_ms = typed.n_tasks - tasks, typed.task_ms - ms
        if tasks > 0 and other_tasks > 0 and other_ms > 0:
            ratios[host] = ((ms / tasks) / (other_ms / other_tasks), tasks)
    return ratios


def host_findings(
    times_by_run: Mapping[str, HostTimes], outlier_runs: Sequence[str], factor: float
) -> list[dict[str, Any]]:
    """Per outlier run of one stage: which hosts made it slow (``verdict`` "hosts"), none ("everywhere"), or
    nothing to say ("unknown": fewer than 3 hosts, or no host information).

    ``times_by_run`` holds the stage's summed ``host_task_times`` in the category's runs. A host is named when its
    ratio (:func:`host_ratios`) is at least ``factor`` and at least ``factor`` times its usual ratio, the median
    over the runs that are not outliers of this stage where it is listed (1 where it never is): a host that is
    always twice as slow did not make this run slow. Named hosts come slowest first.
    """
    outliers = set(outlier_runs)
    usual_ratios: dict[str, list[float]] = defaultdict(list)
    for run_id, times in times_by_run.items():
        if run_id not in outliers:
            for host, (ratio, _tasks) in host_ratios(times).items():
                usual_ratios[host].append(ratio)
    usual = {host: statistics.median(ratios) for host, ratios in usual_ratios.items()}
    findings = []
    for run_id in outlier_runs:
        times = host_times(times_by_run.get(run_id) or {})
        n_hosts = times.n_hosts
        ratios = host_ratios(times)
        if not ratios:
            findings.append({"run": run_id, "verdict": "unknown", "n_hosts": n_hosts, "hosts": []})
            continue
        slow = sorted(
            (
                (host, ratio, tasks)
                for host, (ratio, tasks) in ratios.items()
                if ratio >= factor * max(1.0, usual.get(host, 1.0))
            ),
            key=lambda h: (-h[1], h[0]),
        )
        named = [
            {
                "host": host,
                "ratio": round(ratio, 3),
                "usual": round(usual[host], 3) if host in usual else None,
                "tasks": tasks,
            }
            for host, ratio, tasks in slow
        ]
        verdict = "hosts" if named else "everywhere"
        findings.append({"run": run_id, "verdict": verdict, "n_hosts": n_hosts, "hosts": named})
    return findings


def _add_host_findings(result: dict[str, Any], frame: Any, factor: float) -> None:
    """Each anomalous stage's ``hosts``: :func:`host_findings` of its outlier runs, from one StageSummary query."""
    wanted: list[tuple[dict[str, Any], list[str], str]] = []  # (finding, the category's run ids, stage id)
    for category in result["categories"]:
        anomalous = [s for s in category["stages"] if s.get("anomalous") and str(s.get("stage", "")).isdigit()]
        if anomalous:
            runs = [str(r) for r in frame.loc[frame["signature"] == category["signature"], "run_id"]]
            wanted += [(finding, runs, str(finding["stage"])) for finding in anomalous]
    if not wanted:
        return
    app_pks = sorted({int(r) for _f, runs, _s in wanted for r in runs})
    stage_ids = sorted({int(stage) for _f, _r, stage in wanted})
    attempts: dict[tuple[str, str], list[HostTaskTimes]] = defaultdict(list)
    rows = StageSummary.objects.filter(app_id__in=app_pks, stage_id__in=stage_ids).order_by(
        "app_id", "stage_id", "attempt_id"
    )
    for app_pk, stage_id, times in rows.values_list("app_id", "stage_id", "host_task_times").iterator(chunk_size=2000):
        attempts[(str(app_pk), str(stage_id))].append(host_times(times, f"app {app_pk} stage {stage_id}"))
    for finding, runs, stage in wanted:
        times_by_run = {run: summed_host_times(attempts.get((run, stage), [])) for run in runs}
        finding["hosts"] = host_findings(times_by_run, [str(r) for r in finding["outlier_runs"]], factor)


@dataclass(frozen=True, slots=True)
class DuePair:
    template: str
    cluster_id: int | None
    runs: int
    newest_end: dt.datetime
    stored_end: dt.datetime | None


def due_pairs(config: LocalizationSettings | None = None) -> list[DuePair]:
    """(template, cluster) pairs with a qualifying run newer than their stored result, and enough runs; the ones
    never localized first, then the longest waiting."""
    config = config or localization_settings()
    groups = (
        qualifying_runs()
        .order_by()
        .values("template", "cluster_id")
        .annotate(n=Count("id"), newest=Max("end_time"))
        .filter(n__gte=config.min_runs)
    )
    stored = {
        (s.template, s.cluster_id): s.latest_end
        for s in StageLocalization.objects.only("template", "cluster", "latest_end")
    }
    due = []
    for group in groups:
        key = (group["template"], group["cluster_id"])
        stored_end = stored.get(key)
        if stored_end is None or group["newest"] > stored_end:
            due.append(DuePair(key[0], key[1], group["n"], group["newest"], stored_end))
    epoch = dt.datetime.min.replace(tzinfo=dt.UTC)
    due.sort(key=lambda p: (p.stored_end is not None, p.stored_end or epoch, p.template, p.cluster_id or 0))
    return due


def localize_due(now: dt.datetime | None = None, *, limit: int | None = None) -> list[StageLocalization]:
    """Localize every due pair (see :func:`due_pairs`), at most ``limit`` (default the PER_CALL setting)."""
    config = localization_settings()
    pairs = due_pairs(config)[: limit if limit is not None else config.per_call]
    clusters = Cluster.objects.in_bulk([p.cluster_id for p in pairs if p.cluster_id is not None])
    stored = []
    for pair in pairs:
        cluster = clusters.get(pair.cluster_id) if pair.cluster_id is not None else None
        if pair.cluster_id is not None and cluster is None:
            continue  # the cluster was deleted since the query
        result = localize_template(pair.template, cluster, now=now, config=config)
        if result is not None:
            stored.append(result)
    return stored


def localize_all(
    *, template: str = "", cluster: str | None = None, now: dt.datetime | None = None
) -> list[StageLocalization]:
    """Localize every template with a qualifying run (or only ``template``; ``cluster`` a cluster name, "" for apps
    read from files, None for any), whatever its run count: the command's ``--all`` and ``--template``."""
    config = localization_settings()
    apps = qualifying_runs()
    if template:
        apps = apps.filter(template=template)
    if cluster is not None:
        apps = apps.filter(cluster__name=cluster) if cluster else apps.filter(cluster__isnull=True)
    pairs = sorted(
        {(row["template"], row["cluster_id"]) for row in apps.order_by().values("template", "cluster_id").distinct()},
        key=lambda p: (p[0], p[1] or 0),
    )
    clusters = Cluster.objects.in_bulk([c for _t, c in pairs if c is not None])
    stored = []
    for name, cluster_id in pairs:
        result = localize_template(name, clusters.get(cluster_id) if cluster_id else None, now=now, config=config)
        if result is not None:
            stored.append(result)
    return stored
