"""The Hosts page: the latest straggler-host snapshot of a cluster and window, and one host's detail.

Cluster, window, host and page are GET parameters, so every view is a shareable URL. Reads come from
``analyzer.hosts.selectors`` (typed host records); this module only picks what to show and shapes the charts' data.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

import msgspec
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from analyzer.hosts import selectors as host_selectors
from analyzer.hosts.schema import HostRecord
from analyzer.stored_results import UnreadableResult
from appmodel.formatting import page_z_score

HOSTS_PER_PAGE: Final = 100
SLOWED_APPS_SHOWN: Final = 10  # per straggler, the apps it slowed most (the count says how many there were)
MAX_STRAGGLER_CHARTS: Final = 12  # each straggler's histogram is a chart; more are listed in the table only
TREND_POINTS: Final = 48
RERANK: Final = "The next ranking replaces it (hourly, or now with manage.py rank_hosts)."

# The candidate distributions (analysis.hosts.fit.FAMILIES) in words.
FAMILY_NAMES: Final = {
    "fisk3": "log-logistic (3 parameters)",
    "lognorm3": "lognormal (3 parameters)",
    "norm": "normal",
    "expon2": "exponential (2 parameters)",
    "weibull3": "Weibull (3 parameters)",
    "gumbel_r": "Gumbel (maximum)",
    "gumbel_l": "Gumbel (minimum)",
    "gamma3": "gamma (3 parameters)",
    "fisk2": "log-logistic (2 parameters)",
}


def _param(request: HttpRequest, name: str, limit: int = 255) -> str:
    return request.GET.get(name, "").replace("\x00", "").strip()[:limit]


def histogram_chart(histogram: host_selectors.HostHistogram, host: str, family: str | None) -> dict[str, Any]:
    """The ``host-histogram`` chart's data (webui/static/webui/charts.js)."""
    edges = histogram.edges
    return {
        "host": host,
        "labels": [f"{page_z_score(edges[i])} to {page_z_score(edges[i + 1])}" for i in range(len(edges) - 1)],
        "ticks": [page_z_score(edges[i]) for i in range(len(edges) - 1)],
        "counts": histogram.counts,
        "expected": histogram.expected,
        "family": FAMILY_NAMES.get(family or "", family or ""),
    }


def trend_chart(trend: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The ``host-trend`` chart's data: one series per window over the union of their snapshot times."""
    times = sorted({p["computed_at"] for points in trend.values() for p in points})
    series = []
    for window, points in trend.items():
        by_time = {p["computed_at"]: p for p in points}
        series.append(
            {
                "window": window,
                "mean": [by_time[t]["mean"] if t in by_time else None for t in times],
                "level": [by_time[t]["level"] if t in by_time and by_time[t]["level"] >= 0 else None for t in times],
            }
        )
    return {
        "labels": [t.strftime("%Y-%m-%d %H:%M") for t in times],
        "ticks": [t.strftime("%m-%d %H:%M") for t in times],
        "runs": ["snapshot" for _t in times],
        "series": series,
    }


def _choices(request: HttpRequest) -> tuple[list[str], list[str], str, str]:
    clusters, windows = host_selectors.snapshot_choices()
    default = host_selectors.default_choice() or ("", "")
    cluster = _param(request, "cluster", 100) or default[0]
    window = _param(request, "window", 16) or default[1]
    return clusters, windows, cluster, window


@require_safe
def hosts(request: HttpRequest) -> HttpResponse:
    clusters, windows, cluster, window = _choices(request)
    context: dict[str, Any] = {
        "clusters": clusters,
        "windows": windows,
        "cluster": cluster,
        "window": window,
        "no_cluster": host_selectors.NO_CLUSTER,
    }
    if not clusters:
        return render(request, "webui/hosts.html", context)
    try:
        snapshot = host_selectors.latest_snapshot(cluster, window)
    except UnreadableResult as error:
        context["unreadable"] = error.sentence(RERANK)
        return render(request, "webui/hosts.html", context, status=503)
    if snapshot is None:
        context["missing"] = True
        return render(request, "webui/hosts.html", context, status=404)
    context["facts"] = host_selectors.snapshot_facts(snapshot)
    host = _param(request, "host")
    if host:
        return _host_detail(request, snapshot, host, context)
    only_stragglers = request.GET.get("only") == "stragglers"
    records = host_selectors.snapshot_hosts(snapshot)
    stragglers = [r for r in records if r.straggler]
    shown = stragglers if only_stragglers else records
    page = Paginator(shown, HOSTS_PER_PAGE).get_page(request.GET.get("page"))
    charts = []
    for i, record in enumerate(stragglers[:MAX_STRAGGLER_CHARTS]):
        histogram = host_selectors.host_histogram(snapshot, record)
        slowed, slowed_count = host_selectors.slowed_apps(snapshot, record, limit=SLOWED_APPS_SHOWN)
        charts.append(
            {
                "id": f"straggler-{i + 1}",
                "host": _row(record, cluster, window),
                "histogram": histogram,
                "data": histogram_chart(histogram, record.host, record.family),
                "slowed": slowed,
                "slowed_count": slowed_count,
            }
        )
    context |= {
        "page": page,
        "rows": [_row(r, cluster, window) for r in page.object_list],
        "elided_pages": page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1),
        "only_stragglers": only_stragglers,
        "n_shown": len(shown),
        "charts": charts,
        "more_stragglers": max(0, len(stragglers) - MAX_STRAGGLER_CHARTS),
    }
    return render(request, "webui/hosts.html", context)


def host_url(cluster: str, window: str, host: str) -> str:
    return reverse("webui:hosts") + "?" + urlencode({"cluster": cluster, "window": window, "host": host})


def _row(record: HostRecord, cluster: str, window: str) -> dict[str, Any]:
    """A host's record with what the templates print (the family in words, its detail's URL)."""
    family = record.family
    return {
        **msgspec.structs.asdict(record),
        "family_name": FAMILY_NAMES.get(family or "", family or ""),
        "url": host_url(cluster, window, record.host),
    }


def _host_detail(
    request: HttpRequest, snapshot: host_selectors.HostSnapshot, host: str, context: dict[str, Any]
) -> HttpResponse:
    context["host"] = host
    trend = host_selectors.host_trend(host, context["cluster"], limit=TREND_POINTS)
    trend_rows = sorted(
        ({"window": w, **p} for w, points in trend.items() for p in points),
        key=lambda p: (p["computed_at"], p["window"]),
        reverse=True,
    )
    context |= {"trend": trend, "trend_rows": trend_rows, "trend_data": trend_chart(trend) if trend_rows else None}
    record = host_selectors.host_record(snapshot, host)
    if record is None:
        context["host_missing"] = True
        return render(request, "webui/hosts_detail.html", context, status=404)
    histogram = host_selectors.host_histogram(snapshot, record)
    row = _row(record, context["cluster"], context["window"])
    context |= {
        "record": row,
        "histogram": histogram,
        "detail_chart": {
            "id": "host-histogram-chart",
            "host": row,
            "histogram": histogram,
            "data": histogram_chart(histogram, host, record.family),
        },
    }
    return render(request, "webui/hosts_detail.html", context)
