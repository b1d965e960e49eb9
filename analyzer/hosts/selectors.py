"""Straggler hosts in the product, read side: the stored snapshots, a host's record, histogram and trend.

What the Hosts page (``webui.hosts``) and ``/api/v1/hosts`` read; ``analyzer.hosts.services`` ranks and stores the
snapshots. A snapshot's JSON is decoded as ``analyzer.hosts.schema`` (an older row's missing keys take their
defaults; one that does not decode raises ``UnreadableResult``, logged, which the page and the API report).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from django.db.models import F, Q

from analysis.hosts import fit as fitting
from analysis.hosts.rank import HIST_EDGES
from analyzer.hosts import schema
from analyzer.models import AppHostTasks, Cluster, HostRank, HostRankingSnapshot
from analyzer.stored_results import decode

# The cluster value for apps analyzed from files (no cluster): not a valid cluster name (a slug), so never ambiguous.
NO_CLUSTER: Final = "(files)"
_WINDOW: Final = re.compile(r"(\d{1,4})([hd])")


def parse_window(label: str) -> dt.timedelta:
    """``"24h"`` or ``"7d"`` (any whole number of hours or days up to 9999) as a duration; ValueError otherwise."""
    match = _WINDOW.fullmatch(label.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"a window is a whole number of hours or days, such as 24h or 7d, not {label[:40]!r}")
    n = int(match.group(1))
    return dt.timedelta(hours=n) if match.group(2) == "h" else dt.timedelta(days=n)


def cluster_filter(cluster_id: int | None) -> Q:
    return Q(cluster__isnull=True) if cluster_id is None else Q(cluster_id=cluster_id)


def cluster_value(cluster: Cluster | None) -> str:
    return cluster.name if cluster is not None else NO_CLUSTER


def snapshot_choices() -> tuple[list[str], list[str]]:
    """(clusters, windows) that have a snapshot: cluster values (names, ``NO_CLUSTER``) and window labels."""
    pairs = HostRankingSnapshot.objects.order_by().values_list("cluster__name", "window").distinct()
    clusters = sorted({name if name is not None else NO_CLUSTER for name, _w in pairs}, key=lambda c: c != NO_CLUSTER)
    windows = sorted({w for _c, w in pairs}, key=window_order)
    return clusters, windows


def window_order(label: str) -> float:
    try:
        return parse_window(label).total_seconds()
    except ValueError:
        return float("inf")


def _snapshots(cluster: str, window: str) -> Any:
    query = HostRankingSnapshot.objects.filter(window=window)
    return query.filter(cluster__isnull=True) if cluster == NO_CLUSTER else query.filter(cluster__name=cluster)


WHAT = "straggler-host snapshot"
# The newest window first, then the newest computation: a backfill (``rank_hosts --backfill``) computes old windows
# after new ones, and the page must still open on the window that ends last.
LATEST_FIRST: Final = (F("window_end").desc(nulls_last=True), "-computed_at", "-id")


@dataclass(frozen=True, slots=True)
class HostSnapshot:
    """A stored snapshot with its JSON decoded: the row's own columns, the ranking and its configuration."""

    row: HostRankingSnapshot
    data: schema.Snapshot
    config: schema.RankingConfig


def read_snapshot(row: HostRankingSnapshot) -> HostSnapshot:
    """``row`` decoded; ``UnreadableResult`` when its JSON does not decode."""
    return HostSnapshot(
        row=row,
        data=decode(row.snapshot, schema.Snapshot, what=WHAT, row=row),
        config=decode(row.config, schema.RankingConfig, what=WHAT, row=row),
    )


def latest_snapshot(cluster: str, window: str) -> HostSnapshot | None:
    """The newest snapshot of one cluster (a name, or ``NO_CLUSTER``) and window, decoded; ``UnreadableResult``
    when its JSON does not decode."""
    row = _snapshots(cluster, window).select_related("cluster").order_by(*LATEST_FIRST).first()
    return read_snapshot(row) if row is not None else None


def default_choice() -> tuple[str, str] | None:
    """(cluster, window) of the newest snapshot, preferring the shortest window: what the page opens on."""
    newest = (
        HostRankingSnapshot.objects.select_related("cluster")
        .defer("snapshot", "config")  # a big cluster's snapshot JSON is megabytes
        .order_by(*LATEST_FIRST)
        .first()
    )
    if newest is None:
        return None
    cluster = cluster_value(newest.cluster)
    for window in snapshot_choices()[1]:
        if _snapshots(cluster, window).exists():
            return cluster, window
    return cluster, newest.window


def snapshot_facts(snapshot: HostSnapshot) -> dict[str, Any]:
    """What a snapshot says about itself (the page's facts, the API's ``snapshot`` object)."""
    row, data, config = snapshot.row, snapshot.data, snapshot.config
    return {
        "id": row.pk,
        "cluster": cluster_value(row.cluster),
        "window": row.window,
        "window_start": row.window_start,
        "window_end": row.window_end,
        "computed_at": row.computed_at,
        "compute_ms": row.compute_ms,
        "n_apps": row.n_apps,
        "n_tasks": row.n_tasks,
        "n_tasks_ranked": data.n_tasks_ranked,
        "n_hosts": row.n_hosts,
        "n_ranked": row.n_ranked,
        "n_levels": row.n_levels,
        "n_stragglers": row.n_stragglers,
        "fleet_centre": data.fleet_centre,
        "min_host_tasks": config.min_host_tasks,
        "min_effect": config.min_effect,
        "min_slowdown": config.min_slowdown,
        "alpha": config.alpha,
        "extreme_z": config.extreme_z,
    }


def snapshot_hosts(snapshot: HostSnapshot) -> list[schema.HostRecord]:
    """Every host's record, slowest level first (unranked hosts last), as the library ordered them."""
    return snapshot.data.hosts


def host_record(snapshot: HostSnapshot, host: str) -> schema.HostRecord | None:
    return next((h for h in snapshot.data.hosts if h.host == host), None)


@dataclass(frozen=True, slots=True)
class HostHistogram:
    """A host's z-scores over the level-0 histogram bins, with the fitted family's expected count per bin."""

    edges: list[float]
    counts: list[int]
    expected: list[float | None]  # n x pdf(bin centre) x bin width; None where the fit gives nothing
    n: int  # z-scores histogrammed (those outside the bins included)
    below: int  # z-scores left of the first bin
    above: int  # right of the last
    source: str  # "snapshot" (the ranking's own counts) or "stored" (the window's stored samples, recounted)

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"low": self.edges[i], "high": self.edges[i + 1], "count": c, "expected": self.expected[i]}
            for i, c in enumerate(self.counts)
        ]


def fitted_expected(record: schema.HostRecord, edges: Sequence[float], n: int) -> list[float | None]:
    """Expected tasks per bin under the host's fitted distribution (``fit.SCIPY``), for drawing over its histogram."""
    family, loc, scale, shape = record.family, record.loc, record.scale, record.shape
    nothing: list[float | None] = [None] * (len(edges) - 1)
    if family not in fitting.SCIPY or loc is None or scale is None or not scale > 0:
        return nothing
    if family in fitting.SHAPED and shape is None:
        return nothing
    e = np.asarray(edges, dtype=np.float64)
    centres, widths = (e[:-1] + e[1:]) / 2.0, np.diff(e)
    args = fitting.scipy_args(family, float(shape or 0.0), float(loc), float(scale))
    with np.errstate(all="ignore"):
        pdf = fitting.SCIPY[family].pdf(centres, *args)
    return [round(float(v), 3) if np.isfinite(v) else None for v in pdf * widths * n]


def host_histogram(snapshot: HostSnapshot, record: schema.HostRecord) -> HostHistogram:
    """The host's histogram: the snapshot's own (level-0 hosts) or recounted from the window's stored samples."""
    row, data = snapshot.row, snapshot.data
    edges = list(data.hist_edges or HIST_EDGES)
    host = record.host
    stored = data.histograms.get(host)
    n = record.n_tasks
    if stored is not None and len(stored) == len(edges) - 1:
        counts = list(stored)
        inside = sum(counts)
        return HostHistogram(edges, counts, fitted_expected(record, edges, n), n, 0, n - inside, "snapshot")
    rows = AppHostTasks.objects.filter(
        cluster_filter(row.cluster_id),
        host=host,
        end_time__gt=row.window_start,
        end_time__lte=row.window_end,
    ).values_list("z", flat=True)
    parts = [np.frombuffer(bytes(z), dtype="<f4") for z in rows if z]
    z = np.concatenate(parts).astype(np.float64) if parts else np.empty(0)
    z = z[np.isfinite(z)]
    counts_arr, _ = np.histogram(z, bins=np.asarray(edges))
    below, above = int((z < edges[0]).sum()), int((z > edges[-1]).sum())
    return HostHistogram(
        edges, counts_arr.tolist(), fitted_expected(record, edges, int(z.size)), int(z.size), below, above, "stored"
    )


def host_trend(host: str, cluster: str, windows: Sequence[str] | None = None, limit: int = 48) -> dict[str, list[dict]]:
    """Per window, the host's place in each kept snapshot of the cluster, oldest first (at most ``limit``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for window in windows or snapshot_choices()[1]:
        ranks = (
            HostRank.objects.filter(host=host, snapshot__in=_snapshots(cluster, window))
            .order_by(F("snapshot__window_end").desc(nulls_last=True), "-snapshot__computed_at", "-snapshot_id")
            .values(  # the snapshots' own columns only: their JSON is megabytes each
                "level",
                "straggler",
                "n_tasks",
                "mean",
                "ci_low",
                "ci_high",
                "p_extreme",
                computed_at=F("snapshot__computed_at"),
                window_end=F("snapshot__window_end"),
                n_levels=F("snapshot__n_levels"),
            )[:limit]
        )
        points: list[dict[str, Any]] = [dict(r) for r in ranks]
        if points:
            out[window] = points[::-1]
    return out


@dataclass(frozen=True, slots=True)
class SlowedApp:
    """An app of the window in which a host's tasks ran at least ``min_slowdown`` times its class's median speed."""

    app_pk: int
    app_id: str
    name: str
    end_time: dt.datetime | None
    n_tasks: int  # the host's tasks in the app
    speed: float  # times the sibling median those tasks took


def slowed_apps(snapshot: HostSnapshot, record: schema.HostRecord, limit: int = 10) -> tuple[list[SlowedApp], int]:
    """The apps of the snapshot's window that ``record``'s host slowed, slowest first (at most ``limit``), and how
    many there were: those where its tasks ran at least the snapshot's ``min_slowdown`` times its class's median
    speed. Rows stored before speeds existed are not counted (their speed is unknown)."""
    if record.class_speed is None:
        return [], 0
    floor = record.class_speed * snapshot.config.min_slowdown
    row = snapshot.row
    rows = (
        AppHostTasks.objects.filter(
            cluster_filter(row.cluster_id),
            host=record.host,
            end_time__gt=row.window_start,
            end_time__lte=row.window_end,
            log_ratio_sum__isnull=False,
            n_tasks__gt=0,
        )
        .order_by()
        .values_list("app_id", "app__app_id", "app__name", "end_time", "n_tasks", "log_ratio_sum")
    )
    found = []
    for app_pk, app_id, name, end_time, n_tasks, ratio_sum in rows:
        if ratio_sum is None:  # excluded by the query; typed as nullable
            continue
        speed = math.exp(float(ratio_sum) / int(n_tasks))
        if speed >= floor:
            found.append(SlowedApp(app_pk, str(app_id), str(name or ""), end_time, int(n_tasks), speed))
    found.sort(key=lambda a: (-a.speed, a.app_pk))
    return found[:limit], len(found)
