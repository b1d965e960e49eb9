"""Stage anomaly localization in the product (issue 7): which stage made a recurring job's runs slow, and in which runs.

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
* **Which hosts.** For each outlier run of an anomalous stage, the stage's ``StageSummary.host_task_times`` in that
  run (summed over the stage id's attempts, like its duration) names the hosts whose mean task time was at least
  ``HINDSIGHT_STAGE_LOCALIZATION_HOST_FACTOR`` (1.5) times the mean over the stage's other hosts *and* that factor
  times the host's usual ratio (its median in the category's runs where the stage was not the outlier): a host
  that is always slower did not make this run slow. No host named: the stage was slow on every host. Fewer than
  3 hosts (local mode: one) or no host information: nothing is said about hosts (:func:`host_findings`).
* **When.** :func:`localize_due`, hourly by beat: every pair with a qualifying run newer than its stored
  ``latest_end`` and at least ``HINDSIGHT_STAGE_LOCALIZATION_MIN_RUNS`` qualifying runs, oldest result first, at
  most ``HINDSIGHT_STAGE_LOCALIZATION_PER_CALL`` pairs a call (the rest on the next call).

:func:`localization_views` is the read side for the history page and the API: plain data with sentences, the CV
against alpha in words, outlier runs with how much slower they were, and whether newer runs are not in it yet.
"""

from __future__ import annotations

import datetime as dt
import logging
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from analyzer.models import AnalyzedApp, Cluster, StageLocalization, StageSummary

log = logging.getLogger(__name__)

SUCCEEDED = "SUCCEEDED"


@dataclass(frozen=True, slots=True)
class LocalizationSettings:
    """The library's thresholds and the service's bounds (config/settings/base.py, HINDSIGHT_STAGE_LOCALIZATION_*)."""

    alpha: float
    beta: float
    min_runs: int
    min_effect: float
    max_runs: int
    per_call: int
    host_factor: float = 1.5


def localization_settings() -> LocalizationSettings:
    from analysis.stages.localize import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_MIN_EFFECT, DEFAULT_MIN_RUNS

    def get(name: str, default: float) -> float:
        return float(getattr(settings, f"HINDSIGHT_STAGE_LOCALIZATION_{name}", default))

    return LocalizationSettings(
        alpha=get("ALPHA", DEFAULT_ALPHA),
        beta=get("BETA", DEFAULT_BETA),
        min_runs=max(2, int(get("MIN_RUNS", DEFAULT_MIN_RUNS))),
        min_effect=get("MIN_EFFECT", DEFAULT_MIN_EFFECT),
        max_runs=max(2, int(get("MAX_RUNS", 200))),
        per_call=max(1, int(get("PER_CALL", 50))),
        host_factor=max(1.0, get("HOST_FACTOR", 1.5)),
    )


def _qualifying() -> QuerySet[AnalyzedApp]:
    return AnalyzedApp.objects.exclude(template="").filter(status=SUCCEEDED, partial=False, end_time__isnull=False)


def _of_cluster(apps: QuerySet[AnalyzedApp], cluster: Cluster | None) -> QuerySet[AnalyzedApp]:
    return apps.filter(cluster=cluster) if cluster is not None else apps.filter(cluster__isnull=True)


def latest_runs(template: str, cluster: Cluster | None, limit: int) -> list[AnalyzedApp]:
    """The template's latest ``limit`` qualifying runs on ``cluster`` (None: apps read from files), newest first."""
    apps = _of_cluster(_qualifying().filter(template=template), cluster)
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
        "result": result,
        "runs": runs,
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


def summed_host_times(attempts: Iterable[Any]) -> dict[str, Any]:
    """One run's ``host_task_times`` of a stage summed over its attempts (as its duration is), ``{}`` if none.

    Each attempt keeps at most 16 hosts, so after a retry on a large cluster ``n_hosts`` is a lower bound.
    """
    n_hosts = n_tasks = task_ms = 0
    per_host: dict[str, list[int]] = {}
    for attempt in attempts:
        if not isinstance(attempt, Mapping) or not attempt:
            continue
        n_hosts = max(n_hosts, int(_number(attempt.get("n_hosts"))))
        n_tasks += int(_number(attempt.get("n_tasks")))
        task_ms += int(_number(attempt.get("task_ms")))
        for entry in _list(attempt.get("hosts")):
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
                continue
            tasks, ms = int(_number(entry[1])), int(_number(entry[2]))
            if tasks > 0 and ms >= 0:
                kept = per_host.setdefault(entry[0], [0, 0])
                kept[0] += tasks
                kept[1] += ms
    if not per_host:
        return {}
    hosts = [[host, tasks, ms] for host, (tasks, ms) in per_host.items()]
    return {"n_hosts": max(n_hosts, len(hosts)), "n_tasks": n_tasks, "task_ms": task_ms, "hosts": hosts}


def host_ratios(times: Mapping[str, Any]) -> dict[str, tuple[float, int]]:
    """Per listed host: (its mean task time / the mean of the stage's other tasks, its tasks); ``{}`` below 3 hosts."""
    if int(_number(times.get("n_hosts"))) < MIN_HOSTS:
        return {}
    n_tasks, task_ms = _number(times.get("n_tasks")), _number(times.get("task_ms"))
    ratios = {}
    for entry in _list(times.get("hosts")):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            continue
        tasks, ms = _number(entry[1]), _number(entry[2])
        other_tasks, other_ms = n_tasks - tasks, task_ms - ms
        if tasks > 0 and other_tasks > 0 and other_ms > 0:
            ratios[entry[0]] = ((ms / tasks) / (other_ms / other_tasks), int(tasks))
    return ratios


def host_findings(
    times_by_run: Mapping[str, Mapping[str, Any]], outlier_runs: Sequence[str], factor: float
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
        times = times_by_run.get(run_id) or {}
        n_hosts = int(_number(times.get("n_hosts")))
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
    attempts: dict[tuple[str, str], list[Any]] = defaultdict(list)
    rows = StageSummary.objects.filter(app_id__in=app_pks, stage_id__in=stage_ids).order_by(
        "app_id", "stage_id", "attempt_id"
    )
    for app_pk, stage_id, times in rows.values_list("app_id", "stage_id", "host_task_times").iterator(chunk_size=2000):
        attempts[(str(app_pk), str(stage_id))].append(times)
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
        _qualifying()
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
    apps = _qualifying()
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


# --- read side: the history page, the API and the command ------------------------------------------------------


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
    apps = _qualifying().filter(template__in=list(templates))
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
        _qualifying().filter(condition).order_by().values("template", "cluster_id").annotate(newest=Max("end_time"))
    )
    return {(g["template"], g["cluster_id"]): g["newest"] for g in grouped}


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def stage_label(stage_id: str, name: str) -> str:
    """``stage 7 (count at job.py:42)``; ``stage 7`` when the name is unknown."""
    return f"stage {stage_id} ({name})" if name else f"stage {stage_id}"


def _percent(x: float) -> str:
    return f"{x * 100:.0f} %"


def cv_phrase(cv: float, alpha: float) -> str:
    """The CV gate in words: "run times vary 6 %, under the 15 % that triggers a look"."""
    if cv > alpha:
        return f"run times vary {_percent(cv)}, over the {_percent(alpha)} that triggers a look"
    return f"run times vary {_percent(cv)}, under the {_percent(alpha)} that triggers a look"


def _reason(category: dict[str, Any], alpha: float, min_runs: int) -> str:
    runs = int(_number(category.get("runs")))
    if category.get("analysed"):
        return ""
    if runs < min_runs:
        return f"{runs} run{'' if runs == 1 else 's'}: at least {min_runs} are needed"
    if not category.get("anomalous"):
        return cv_phrase(_number(category.get("cv")), alpha)
    return str(category.get("reason") or "not analysed")


def _runs_text(runs: Sequence[dict[str, Any]]) -> str:
    def one(run: dict[str, Any]) -> str:
        end = run["end"].strftime("%Y-%m-%d %H:%M") if run["end"] else "end unknown"
        return f"{run['app_id']} ({end}, {run['slowdown']:.1f}x its usual)"

    texts = [one(r) for r in runs[:5]]
    more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
    if len(texts) == 1:
        return f"run {texts[0]}"
    if more:
        return "runs " + ", ".join(texts) + more
    return "runs " + ", ".join(texts[:-1]) + " and " + texts[-1]


HOSTS_SHOWN = 3


def _host_view(raw: Any) -> dict[str, Any]:
    """A stored :func:`host_findings` entry as the page, the API and the sentences read it."""
    raw = _dict(raw)
    slow = []
    for host in _list(raw.get("hosts")):
        if isinstance(host, dict) and isinstance(host.get("host"), str):
            usual = host.get("usual")
            slow.append(
                {
                    "host": host["host"],
                    "ratio": _number(host.get("ratio"), 1.0),
                    "usual": _number(usual) if isinstance(usual, int | float) and not isinstance(usual, bool) else None,
                    "tasks": int(_number(host.get("tasks"))),
                }
            )
    verdict = raw.get("verdict")
    if verdict not in ("hosts", "everywhere") or (verdict == "hosts" and not slow):
        verdict = "unknown"
    return {
        "verdict": verdict,
        "n_hosts": int(_number(raw.get("n_hosts"))),
        "slow_hosts": slow if verdict == "hosts" else [],
        "shown": slow[:HOSTS_SHOWN] if verdict == "hosts" else [],
        "more": max(0, len(slow) - HOSTS_SHOWN) if verdict == "hosts" else 0,
    }


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _hosts_text(runs: Sequence[dict[str, Any]]) -> str:
    """The sentence's host clause: "; in run X its tasks on host h1 took 2.1x the others'", "; it was slow on every
    host"; "" when no run's hosts say anything (local mode, fewer than 3 hosts)."""
    shown = runs[:5]  # the runs _runs_text names
    known = [r for r in shown if r["hosts"]["verdict"] != "unknown"]
    if not known:
        return ""
    if len(known) == len(shown) and all(r["hosts"]["verdict"] == "everywhere" for r in known):
        return "; it was slow on every host" if len(shown) == 1 else "; in each it was slow on every host"
    clauses = []
    for r in known:
        hosts = r["hosts"]
        if hosts["verdict"] == "everywhere":
            clauses.append(f"in run {r['app_id']} it was slow on every host")
            continue
        names = [h["host"] for h in hosts["shown"]] + ([f"{hosts['more']} more"] if hosts["more"] else [])
        ratios = _and([f"{h['ratio']:.1f}x" for h in hosts["shown"]])
        usual = [f"{h['usual']:.1f}x" for h in hosts["shown"] if h["usual"] is not None and h["usual"] >= 1.2]
        usually = f" (usually {_and(usual)})" if usual and len(usual) == len(hosts["shown"]) else ""
        plural = "s" if len(hosts["slow_hosts"]) > 1 else ""
        clauses.append(
            f"in run {r['app_id']} its tasks on host{plural} {_and(names)} took {ratios} the others'{usually}"
        )
    return "; " + "; ".join(clauses)


def localization_view(row: StageLocalization, newest_end: dt.datetime | None = None) -> dict[str, Any]:
    """A stored result as plain data for the page, the API and the command. Tolerates any stored JSON shape."""
    result, runs_map = _dict(row.result), _dict(row.runs)
    params = _dict(result.get("params"))
    alpha = _number(params.get("alpha"), 0.15)
    min_runs = int(_number(params.get("min_runs"), 8))
    cluster_name = row.cluster.name if row.cluster else ""

    def run(run_id: Any, slowdown: Any, hosts: Any) -> dict[str, Any]:
        known = _dict(runs_map.get(str(run_id)))
        pk = known.get("pk")
        return {
            "run_id": str(run_id),
            "pk": pk if isinstance(pk, int) else None,
            "app_id": str(known.get("app_id") or run_id),
            "attempt_id": str(known.get("attempt_id") or ""),
            "end": _parse_time(known.get("end")),
            "slowdown": _number(slowdown, 1.0),
            "cluster": cluster_name,
            "hosts": _host_view(hosts),
        }

    categories: list[dict[str, Any]] = []
    sentences: list[str] = []
    names_by_template_stage: dict[str, str] = {}
    for raw in _list(result.get("categories")):
        if not isinstance(raw, dict):
            continue
        names = _dict(raw.get("stage_names"))
        stages: list[dict[str, Any]] = []
        for finding in _list(raw.get("stages")):
            if not isinstance(finding, dict):
                continue
            stage_id = str(finding.get("stage", "?"))
            name = str(names.get(stage_id) or "")
            names_by_template_stage.setdefault(stage_id, name)
            outliers = _list(finding.get("outlier_runs"))
            slowdowns = list(_list(finding.get("slowdown")))
            slowdowns += [1.0] * (len(outliers) - len(slowdowns))
            hosts_by_run = {str(h.get("run")): h for h in _list(finding.get("hosts")) if isinstance(h, dict)}
            outlier_runs = [run(r, s, hosts_by_run.get(str(r))) for r, s in zip(outliers, slowdowns, strict=False)]
            verdicts = [r["hosts"]["verdict"] for r in outlier_runs]
            stage: dict[str, Any] = {
                "stage_id": stage_id,
                "name": name,
                "label": stage_label(stage_id, name),
                "cosine": _number(finding.get("cosine")),
                "anomalous": bool(finding.get("anomalous")),
                "evidence": _number(finding.get("evidence")),
                "outlier_runs": outlier_runs,
                # The page's host clause: every outlier run slow on every host, or the runs whose hosts say something.
                "slow_everywhere": bool(verdicts) and all(v == "everywhere" for v in verdicts),
                "host_runs": [r for r in outlier_runs[:6] if r["hosts"]["verdict"] != "unknown"],
            }
            stages.append(stage)
        anomalous = [s for s in stages if s["anomalous"]]
        category_sentences = [
            f"{s['label']} is the outlier in {_runs_text(s['outlier_runs'])}{_hosts_text(s['outlier_runs'])}"
            for s in anomalous
        ]
        sentences += category_sentences
        cv = _number(raw.get("cv"))
        runs = int(_number(raw.get("runs")))
        categories.append(
            {
                "signature": str(raw.get("signature") or ""),
                "runs": runs,
                "cv": cv,
                "alpha": alpha,
                "cv_text": cv_phrase(cv, alpha) if runs > 1 else "a single run: nothing to compare",
                "gate": bool(raw.get("anomalous")),
                "analysed": bool(raw.get("analysed")),
                "reason": _reason(raw, alpha, min_runs),
                "stages": stages,
                "anomalous_stages": anomalous,
                "sentences": category_sentences,
                "dropped_stages": [str(s) for s in _list(raw.get("dropped_stages"))],
            }
        )
    ranking = []
    for rank in _list(result.get("ranking")):
        if isinstance(rank, dict):
            stage_id = str(rank.get("stage", "?"))
            name = names_by_template_stage.get(stage_id, "")
            ranking.append(
                {
                    "stage_id": stage_id,
                    "name": name,
                    "label": stage_label(stage_id, name),
                    "categories": int(_number(rank.get("categories"))),
                    "outlier_runs": int(_number(rank.get("outlier_runs"))),
                    "min_cosine": _number(rank.get("min_cosine")),
                }
            )
    stale = newest_end is not None and row.latest_end is not None and newest_end > row.latest_end
    analysed = sum(1 for c in categories if c["analysed"])
    reason = str(result.get("reason") or "")
    if not reason and categories and not analysed:  # say why, by its largest category, not "nothing stands out"
        largest = max(categories, key=lambda c: c["runs"])
        of = f" (its largest of {len(categories)} categories)" if len(categories) > 1 else ""
        reason = f"{largest['reason']}{of}"
    return {
        "template": row.template,
        "cluster": cluster_name,
        "computed_at": row.computed_at,
        "latest_end": row.latest_end,
        "newest_run_end": newest_end,
        "stale": stale,
        "n_runs": row.n_runs,
        "n_categories": row.n_categories,
        "n_anomalous": row.n_anomalous,
        "n_analysed": analysed,
        "params": {k: v for k, v in params.items() if isinstance(v, int | float)},
        "reason": reason,
        "sentences": sentences,
        "categories": categories,
        "ranking": ranking,
    }


def localization_views(*, templates: Sequence[str], cluster: str = "") -> list[dict[str, Any]]:
    """:func:`localization_view` of every stored result of ``templates``, each knowing whether newer runs exist."""
    rows = stored_localizations(templates=templates, cluster=cluster)
    newest = _newest_ends(rows)
    return [localization_view(row, newest.get((row.template, row.cluster_id))) for row in rows]


def history_section(by: str, value: str, cluster: str) -> dict[str, Any]:
    """The history's "Which stage was the outlier?" section: the stored localization of each template of the runs
    (a flow's: one line per job's template), and the templates not computed yet with their successful runs."""
    templates = templates_for_history(by, value, cluster)
    views = localization_views(templates=templates, cluster=cluster)
    computed = {view["template"] for view in views}
    missing = [t for t in templates if t not in computed]
    counts = qualifying_run_counts(templates=missing, cluster=cluster) if missing else {}
    config = localization_settings()
    return {
        "views": views,
        "missing": [{"template": t, "runs": counts.get(t, 0)} for t in missing],
        "min_runs": config.min_runs,
        "alpha": config.alpha,
        "compact": by == "flow_def_id",
    }
