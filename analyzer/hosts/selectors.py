"""Straggler hosts in the product, read side: the stored snapshots, a host's record, histogram and trend.

What the Hosts page (``webui.hosts``) and ``/api/v1/hosts`` read; ``analyzer.hosts.services`` ranks and stores the
snapshots. Snapshot JSON comes from the ranking library (``analysis.hosts``) and is read defensively.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from django.db.models import F, Q

from analysis.hosts import fit as fitting
from analysis.hosts.rank import HIST_EDGES
from analyzer.models import AppHostTasks, Cluster, HostRank, HostRankingSnapshot

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


def latest_snapshot(cluster: str, window: str) -> HostRankingSnapshot | None:
    """The newest snapshot of one cluster (a name, or ``NO_CLUSTER``) and window."""
    return _snapshots(cluster, window).select_related("cluster").order_by("-computed_at", "-id").first()


def default_choice() -> tuple[str, str] | None:
    """(cluster, window) of the newest snapshot, preferring the shortest window: what the page opens on."""
    newest = (
        HostRankingSnapshot.objects.select_related("cluster")
        .defer("snapshot", "config")  # a big cluster's snapshot JSON is megabytes
        .order_by("-computed_at", "-id")
        .first()
    )
    if newest is None:
        return None
    cluster = cluster_value(newest.cluster)
    for window in snapshot_choices()[1]:
        if _snapshots(cluster, window).exists():
            return cluster, window
    return cluster, newest.window


def snapshot_facts(snapshot: HostRankingSnapshot) -> dict[str, Any]:
    """What a snapshot says about itself (the page's facts, the API's ``snapshot`` object)."""
    data = snapshot.snapshot or {}
    return {
        "id": snapshot.pk,
        "cluster": cluster_value(snapshot.cluster),
        "window": snapshot.window,
        "window_start": snapshot.window_start,
        "window_end": snapshot.window_end,
        "computed_at": snapshot.computed_at,
        "compute_ms": snapshot.compute_ms,
        "n_apps": snapshot.n_apps,
        "n_tasks": snapshot.n_tasks,
        "n_tasks_ranked": data.get("n_tasks_ranked"),
        "n_hosts": snapshot.n_hosts,
        "n_ranked": snapshot.n_ranked,
        "n_levels": snapshot.n_levels,
        "n_stragglers": snapshot.n_stragglers,
        "fleet_centre": data.get("fleet_centre"),
        "min_host_tasks": (snapshot.config or {}).get("min_host_tasks"),
        "min_effect": (snapshot.config or {}).get("min_effect"),
        "alpha": (snapshot.config or {}).get("alpha"),
        "extreme_z": (snapshot.config or {}).get("extreme_z"),
    }


def snapshot_hosts(snapshot: HostRankingSnapshot) -> list[dict[str, Any]]:
    """Every host's record, slowest level first (unranked hosts last), as the library ordered them."""
    hosts = (snapshot.snapshot or {}).get("hosts") or []
    return [h for h in hosts if isinstance(h, dict)]


def host_record(snapshot: HostRankingSnapshot, host: str) -> dict[str, Any] | None:
    return next((h for h in snapshot_hosts(snapshot) if h.get("host") == host), None)


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


def fitted_expected(record: dict[str, Any], edges: Sequence[float], n: int) -> list[float | None]:
    """Expected tasks per bin under the host's fitted distribution (``fit.SCIPY``), for drawing over its histogram."""
    family = record.get("family")
    loc, scale, shape = record.get("loc"), record.get("scale"), record.get("shape")
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


def host_histogram(snapshot: HostRankingSnapshot, record: dict[str, Any]) -> HostHistogram:
    """The host's histogram: the snapshot's own (level-0 hosts) or recounted from the window's stored samples."""
    data = snapshot.snapshot or {}
    edges = [float(v) for v in data.get("hist_edges") or HIST_EDGES]
    host = str(record.get("host"))
    stored = (data.get("histograms") or {}).get(host)
    n = int(record.get("n_tasks") or 0)
    if isinstance(stored, list) and len(stored) == len(edges) - 1:
        counts = [int(c) for c in stored]
        inside = sum(counts)
        return HostHistogram(edges, counts, fitted_expected(record, edges, n), n, 0, n - inside, "snapshot")
    rows = AppHostTasks.objects.filter(
        cluster_filter(snapshot.cluster_id),
        host=host,
        end_time__gt=snapshot.window_start,
        end_time__lte=snapshot.window_end,
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
            .order_by("-snapshot__computed_at", "-snapshot_id")
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
