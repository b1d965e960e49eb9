"""Straggler hosts in the product, write side: snapshots of each cluster's host ranking.

Decides which apps a window covers (those whose end falls in (end - window, end]), that each cluster is ranked on
its own (apps read from files, with no cluster, form one fleet of their own), how the z-score samples stored per
app and host (``AppHostTasks``, written when the app is analyzed) become the ranking's task frame (each z-score a
task finishing at its app's end), the per-host cap that bounds long windows' memory, which snapshots are kept, and
each covered app's ``straggler_task_share``. The ranking itself is ``analysis.hosts.rank_hosts``.

Write side: ``rank_hosts_snapshots`` (``manage.py rank_hosts`` and the hourly beat task); the stored JSON is checked
against ``analyzer.hosts.schema`` before it is written (``analyzer.stored_results.validated``). The Hosts page and
API read through ``analyzer.hosts.selectors``.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from analysis.hosts import RankingConfig, rank_hosts
from analyzer.hosts import schema
from analyzer.hosts.selectors import LATEST_FIRST, NO_CLUSTER, cluster_filter, parse_window, window_order
from analyzer.models import AnalyzedApp, AppHostTasks, Cluster, HostRank, HostRankingSnapshot
from analyzer.stored_results import validated

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS: Final = dt.timedelta(milliseconds=1)
_SEED: Final = 0  # of the per-host cap's sample: the same stored rows give the same snapshot
_CHUNK: Final = 2000  # rows fetched at a time while reading a window

End = Literal["now", "latest"] | dt.datetime


class UnknownCluster(ValueError):
    """No cluster has that name."""


def configured_windows() -> tuple[str, ...]:
    windows = tuple(settings.HINDSIGHT_HOSTS_WINDOWS)
    if not windows:
        raise ValueError("HINDSIGHT_HOSTS_WINDOWS names no window (e.g. 24h,7d)")
    for label in windows:
        parse_window(label)
    return windows


def _to_ms(instant: dt.datetime) -> int:
    return (instant - _EPOCH) // _MS  # exact: no float rounding at a window's edge


def ranking_config(window: str, end: dt.datetime) -> RankingConfig:
    """The library's configuration for one window ending at ``end``: the ``HINDSIGHT_HOSTS_*`` thresholds that are
    set, the library's own defaults for the others."""
    library = RankingConfig()

    def setting(name: str, default: float) -> float:
        value = getattr(settings, f"HINDSIGHT_HOSTS_{name}")
        return float(default if value is None else value)

    return RankingConfig(
        window_ms=parse_window(window) // _MS,
        window_end_ms=_to_ms(end),
        min_host_tasks=int(setting("MIN_HOST_TASKS", library.min_host_tasks)),
        min_effect=setting("MIN_EFFECT", library.min_effect),
        alpha=setting("ALPHA", library.alpha),
        extreme_z=setting("EXTREME_Z", library.extreme_z),
        min_slowdown=setting("MIN_SLOWDOWN", library.min_slowdown),
        seed=_SEED,
    )


def class_patterns() -> tuple[tuple[str, str], ...]:
    """``HINDSIGHT_HOSTS_CLASSES`` as (glob, class) pairs; a malformed pair is a clear error."""
    pairs = []
    for item in str(settings.HINDSIGHT_HOSTS_CLASSES or "").split(","):
        if not item.strip():
            continue
        pattern, sep, label = item.partition("=")
        if not sep or not pattern.strip() or not label.strip():
            raise ValueError(f"HINDSIGHT_HOSTS_CLASSES needs glob=class pairs, not {item.strip()[:80]!r}")
        pairs.append((pattern.strip(), label.strip()))
    return tuple(pairs)


def host_classes(hosts: Iterable[str], patterns: Sequence[tuple[str, str]]) -> dict[str, str]:
    """host -> class of the first matching pattern (hosts matching none are left to the ranking to class)."""
    out: dict[str, str] = {}
    if not patterns:
        return out
    for host in hosts:
        for pattern, label in patterns:
            if fnmatch.fnmatchcase(host, pattern):
                out[host] = label
                break
    return out


def max_tasks_per_host() -> int:
    return max(30, int(settings.HINDSIGHT_HOSTS_MAX_TASKS_PER_HOST))


def keep_snapshots() -> int:
    return max(1, int(settings.HINDSIGHT_HOSTS_KEEP_SNAPSHOTS))


# --- the write side --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotOutcome:
    """One (cluster, window) of a ranking run: the stored snapshot, or why nothing was stored."""

    cluster: str | None  # the cluster's name; None for apps analyzed from files
    window: str
    window_start: dt.datetime | None
    window_end: dt.datetime | None
    snapshot: HostRankingSnapshot | None
    reason: str = ""  # why nothing was stored
    seconds: float = 0.0
    pruned: int = 0

    @property
    def cluster_label(self) -> str:
        return self.cluster if self.cluster is not None else "apps read from files"


@dataclass(slots=True)
class _WindowTasks:
    frame: pd.DataFrame
    n_apps: int
    n_tasks: int  # every task with a z-score in the window (the samples stand for these)
    app_host_ms: dict[int, dict[str, int]] = field(default_factory=dict)  # app pk -> host -> task ms


def _clusters(cluster: str | None) -> list[tuple[int | None, str | None]]:
    """(id, name) of the clusters to rank: every one with stored host tasks, or the one asked for."""
    if cluster == NO_CLUSTER:
        return [(None, None)]
    if cluster is not None:
        found = Cluster.objects.filter(name=cluster).values_list("pk", "name").first()
        if found is None:
            raise UnknownCluster(f"no cluster is named {cluster[:80]!r}")
        return [found]
    ids = set(AppHostTasks.objects.order_by().values_list("cluster_id", flat=True).distinct())
    names = dict(Cluster.objects.filter(pk__in=[i for i in ids if i is not None]).values_list("pk", "name"))
    found_clusters: list[tuple[int | None, str | None]] = [(pk, names[pk]) for pk in ids if pk in names]
    found_clusters.sort(key=lambda c: c[1] or "")
    return ([(None, None)] if None in ids else []) + found_clusters


def _load_window(cluster_id: int | None, start: dt.datetime, end: dt.datetime, cap: int) -> _WindowTasks:
    rows = (
        AppHostTasks.objects.filter(cluster_filter(cluster_id), end_time__gt=start, end_time__lte=end)
        .order_by("pk")
        .values_list("app_id", "host", "end_time", "n_tasks", "task_ms", "z", "log_ratio_sum")
    )
    # host -> (z sample, app end ms, the app-host mean log ratio each sampled z stands with: NaN when unknown)
    by_host: dict[str, list[tuple[npt.NDArray[np.float32], int, float]]] = defaultdict(list)
    app_host_ms: dict[int, dict[str, int]] = defaultdict(dict)
    n_tasks = 0
    for app_id, host, end_time, count, task_ms, blob, ratio_sum in rows.iterator(chunk_size=_CHUNK):
        values = np.frombuffer(bytes(blob), dtype="<f4") if blob else np.empty(0, dtype="<f4")
        values = values[np.isfinite(values)]
        n_tasks += int(count)
        app_host_ms[app_id][host] = int(task_ms)
        mean_ratio = float(ratio_sum) / int(count) if ratio_sum is not None and count and count > 0 else math.nan
        if values.size and end_time is not None:  # the window's filter already excludes a null end
            by_host[host].append((values, _to_ms(end_time), mean_ratio if math.isfinite(mean_ratio) else math.nan))
    rng = np.random.default_rng(_SEED)
    hosts: list[npt.NDArray[np.object_]] = []
    zs: list[npt.NDArray[np.float64]] = []
    finishes: list[npt.NDArray[np.int64]] = []
    ratios: list[npt.NDArray[np.float64]] = []
    for host in sorted(by_host):
        parts = by_host[host]
        z = np.concatenate([values for values, _end, _r in parts]).astype(np.float64)
        finish = np.concatenate([np.full(values.size, end_ms, dtype=np.int64) for values, end_ms, _r in parts])
        ratio = np.concatenate([np.full(values.size, r) for values, _end, r in parts])
        if z.size > cap:  # a seeded sample bounds long windows; uniform, so the host's mean stays unbiased
            keep = np.sort(rng.choice(z.size, cap, replace=False))
            z, finish, ratio = z[keep], finish[keep], ratio[keep]
        hosts.append(np.full(z.size, host, dtype=np.object_))
        zs.append(z)
        finishes.append(finish)
        ratios.append(ratio)
    frame = pd.DataFrame(
        {
            "host": np.concatenate(hosts) if hosts else np.empty(0, dtype=object),
            "z": np.concatenate(zs) if zs else np.empty(0),
            "log_ratio": np.concatenate(ratios) if ratios else np.empty(0),
            "finish_ms": np.concatenate(finishes) if finishes else np.empty(0, dtype=np.int64),
        }
    )
    return _WindowTasks(frame=frame, n_apps=len(app_host_ms), n_tasks=n_tasks, app_host_ms=dict(app_host_ms))


def _window_end(cluster_id: int | None, end: End, now: dt.datetime) -> dt.datetime | None:
    if end == "now":
        return now
    if end == "latest":
        latest = AppHostTasks.objects.filter(cluster_filter(cluster_id)).aggregate(latest=Max("end_time"))["latest"]
        return latest if isinstance(latest, dt.datetime) else None
    if isinstance(end, dt.datetime):
        return end if end.tzinfo else end.replace(tzinfo=dt.UTC)
    raise ValueError(f"end is now, latest or a date-time, not {end!r}")


def rank_hosts_snapshots(
    *,
    now: dt.datetime | None = None,
    windows: Sequence[str] | None = None,
    end: End = "now",
    cluster: str | None = None,
) -> list[SnapshotOutcome]:
    """Rank the hosts of every cluster (or only ``cluster``: a name, or ``NO_CLUSTER``) over each window ending
    at ``end`` ("now", "latest": the cluster's last stored app end, or a date-time), storing one snapshot each.

    A window without tasks stores nothing (its outcome says so). Each snapshot is stored with its per-host rows
    in one transaction, with the covered apps' ``straggler_task_share`` (by the shortest configured window, only
    where no ranking set it before) and the pruning of its (cluster, window)'s snapshots beyond
    ``HINDSIGHT_HOSTS_KEEP_SNAPSHOTS``.
    """
    now = now or timezone.now()
    labels = tuple(windows) if windows else configured_windows()
    spans = {label: parse_window(label) for label in labels}
    outcomes: list[SnapshotOutcome] = []
    targets = _clusters(cluster)
    if not targets:
        targets = [(None, None)]
    for cluster_id, name in targets:
        window_end = _window_end(cluster_id, end, now)
        for label, span in spans.items():
            if window_end is None:
                outcomes.append(SnapshotOutcome(name, label, None, None, None, "no analyzed app with host tasks"))
                continue
            # Whole milliseconds, as the stored app ends are, so the query and the library's window agree.
            window_end = _EPOCH + _MS * _to_ms(window_end)
            outcomes.append(_rank_one(cluster_id, name, label, window_end - span, window_end, now))
    return outcomes


def _rank_one(
    cluster_id: int | None, name: str | None, label: str, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> SnapshotOutcome:
    began = time.perf_counter()
    tasks = _load_window(cluster_id, start, end, max_tasks_per_host())
    if tasks.frame.empty:
        reason = "no tasks in the window" if tasks.n_apps == 0 else "no task z-scores in the window"
        return SnapshotOutcome(name, label, start, end, None, reason, time.perf_counter() - began)
    config = ranking_config(label, end)
    classes = host_classes((str(h) for h in tasks.frame["host"].unique()), class_patterns())
    ranked = rank_hosts(tasks.frame, config, classes)
    data = ranked.to_dict()
    data |= {"n_apps": tasks.n_apps, "n_tasks_total": tasks.n_tasks}
    stragglers = {str(h) for h in ranked.stragglers["host"]}
    with transaction.atomic():
        snapshot = HostRankingSnapshot.objects.create(
            cluster_id=cluster_id,
            window=label,
            window_start=start,
            window_end=end,
            computed_at=now,
            compute_ms=0,
            n_apps=tasks.n_apps,
            n_tasks=tasks.n_tasks,
            n_hosts=ranked.n_hosts,
            n_ranked=ranked.n_hosts_ranked,
            n_levels=ranked.n_levels,
            n_stragglers=len(stragglers),
            config=validated(asdict(config), schema.RankingConfig),
            snapshot=validated(data, schema.Snapshot),
        )
        HostRank.objects.bulk_create(_host_ranks(snapshot, data["hosts"]), batch_size=5000)
        if label == min(configured_windows(), key=window_order):  # the shortest: the ranking right after the app
            _set_straggler_shares(tasks.app_host_ms, stragglers)
        pruned = _prune(cluster_id, label)
        snapshot.compute_ms = round((time.perf_counter() - began) * 1000)
        snapshot.save(update_fields=["compute_ms"])
    return SnapshotOutcome(name, label, start, end, snapshot, "", time.perf_counter() - began, pruned)


def _host_ranks(snapshot: HostRankingSnapshot, records: Iterable[dict[str, Any]]) -> Iterable[HostRank]:
    for r in records:
        yield HostRank(
            snapshot=snapshot,
            host=str(r["host"])[:255],
            level=int(r["level"]),
            straggler=bool(r["straggler"]),
            n_tasks=int(r["n_tasks"]),
            mean=r["mean"],
            ci_low=r["ci_low"],
            ci_high=r["ci_high"],
            p_extreme=r["p_extreme_empirical"],
        )


def _set_straggler_shares(app_host_ms: dict[int, dict[str, int]], stragglers: set[str]) -> None:
    """Each covered app's share of task time on this ranking's straggler hosts, unless an earlier ranking set it."""
    pks = list(app_host_ms)
    for i in range(0, len(pks), 1000):
        unset = AnalyzedApp.objects.filter(pk__in=pks[i : i + 1000], straggler_task_share__isnull=True)
        updates = []
        for pk in unset.values_list("pk", flat=True):
            by_host = app_host_ms[pk]
            total = sum(by_host.values())
            if total > 0:
                slow = sum(ms for host, ms in by_host.items() if host in stragglers)
                updates.append(AnalyzedApp(pk=pk, straggler_task_share=slow / total))
        AnalyzedApp.objects.bulk_update(updates, ["straggler_task_share"], batch_size=1000)


def _prune(cluster_id: int | None, window: str) -> int:
    # The windows ending last are kept, whenever computed: a backfill of old windows must not push out today's.
    old = list(
        HostRankingSnapshot.objects.filter(cluster_filter(cluster_id), window=window)
        .order_by(*LATEST_FIRST)
        .values_list("pk", flat=True)[keep_snapshots() :]
    )
    if old:
        HostRankingSnapshot.objects.filter(pk__in=old).delete()
    return len(old)


# --- the backfill -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """Past window ends to rank for one cluster: the first ``batch`` of them, and how many there are in all."""

    cluster: str | None
    ends: list[dt.datetime]
    remaining: int  # ends after this batch


def backfill_plan(cluster_id: int | None, name: str | None, batch: int) -> BackfillPlan:
    """Window ends, oldest first, so that every app with host tasks and no ``straggler_task_share`` yet is covered
    by a ranking of the shortest window ending soon after it.

    Ends lie on a grid of the shortest window's span from the epoch (a day for 24h): an app ending in
    (k-1)*span, k*span] is covered by the window ending at k*span, the ranking "right after it" the attribution
    feature expects. An end already ranked (a stored snapshot of that window ending there) is skipped.
    """
    shortest = min(configured_windows(), key=window_order)
    span_ms = parse_window(shortest) // _MS
    pending = (
        AppHostTasks.objects.filter(
            cluster_filter(cluster_id), end_time__isnull=False, task_ms__gt=0, app__straggler_task_share__isnull=True
        )
        .order_by()
        .values_list("end_time", flat=True)
        .distinct()
    )
    ends_ms = sorted(
        {-(-_to_ms(end) // span_ms) * span_ms for end in pending.iterator(chunk_size=_CHUNK) if end is not None}
    )
    ends = [_EPOCH + _MS * ms for ms in ends_ms]
    done = set(
        HostRankingSnapshot.objects.filter(
            cluster_filter(cluster_id), window=shortest, window_end__in=ends
        ).values_list("window_end", flat=True)
    )
    todo = [end for end in ends if end not in done]
    return BackfillPlan(name, todo[:batch], max(0, len(todo) - batch))


def backfill_snapshots(
    *, batch: int | None = None, cluster: str | None = None, now: dt.datetime | None = None
) -> tuple[list[SnapshotOutcome], list[BackfillPlan]]:
    """Rank every configured window at the past window ends ``backfill_plan`` finds, at most ``batch`` ends per
    cluster (``HINDSIGHT_HOSTS_BACKFILL_BATCH``) per call: ``manage.py rank_hosts --backfill``, run again until no
    end remains. Host evidence (``straggler_task_share``) then exists for apps no hourly ranking covered."""
    size = max(1, int(batch if batch is not None else settings.HINDSIGHT_HOSTS_BACKFILL_BATCH))
    outcomes: list[SnapshotOutcome] = []
    plans: list[BackfillPlan] = []
    for cluster_id, name in _clusters(cluster):
        plan = backfill_plan(cluster_id, name, size)
        plans.append(plan)
        for end in plan.ends:
            outcomes += rank_hosts_snapshots(now=now, end=end, cluster=name if name is not None else NO_CLUSTER)
    return outcomes, plans
