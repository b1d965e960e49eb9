"""The straggler-host endpoints: the latest snapshot's hosts, and one host's indicators, histogram and trend.

``GET /api/v1/hosts?cluster=&window=`` and ``GET /api/v1/hosts/<host>?cluster=&window=``; without ``cluster`` and
``window``, the newest snapshot's (the shortest window). Reads come from ``analyzer.hosts.selectors``; a snapshot
that cannot be read answers 503 with code ``unreadable`` (the next hourly ranking replaces it).
"""

from __future__ import annotations

from typing import Any, Final

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analyzer.hosts import schema
from analyzer.hosts import selectors as host_selectors
from analyzer.stored_results import UnreadableResult
from webui.api.errors import BAD_REQUEST, COMMON, ErrorSerializer, error_body

MAX_LIMIT: Final = 1000
DEFAULT_LIMIT: Final = 100

NO_SNAPSHOT = OpenApiResponse(ErrorSerializer, description="No snapshot of that cluster and window, or no such host.")
UNREADABLE = OpenApiResponse(
    ErrorSerializer,
    description="The latest snapshot cannot be read (stored in a shape this version does not read; code "
    "unreadable): the next ranking replaces it (hourly, or now with manage.py rank_hosts).",
)
# Indicators a snapshot stores (analyzer.hosts.schema.HostRecord) that the API does not serve: the fitted central
# interval and the interval that was levelled say how the levels were made, not how slow the host is.
NOT_SERVED: Final = frozenset({"fit_low", "fit_high", "interval_low", "interval_high"})


class SnapshotFactsSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    cluster = serializers.CharField(help_text=f'The cluster\'s name, or "{host_selectors.NO_CLUSTER}" for files.')
    window = serializers.CharField(help_text='"24h", "7d", ...: apps that ended in it count.')
    window_start = serializers.DateTimeField(allow_null=True)
    window_end = serializers.DateTimeField(allow_null=True)
    computed_at = serializers.DateTimeField()
    compute_ms = serializers.IntegerField()
    n_apps = serializers.IntegerField()
    n_tasks = serializers.IntegerField(help_text="Tasks with a z-score among their siblings in the window.")
    n_tasks_ranked = serializers.IntegerField(allow_null=True, help_text="Their z-scores ranked (a bounded sample).")
    n_hosts = serializers.IntegerField()
    n_ranked = serializers.IntegerField(help_text="Hosts with at least min_host_tasks z-scores.")
    n_levels = serializers.IntegerField()
    n_stragglers = serializers.IntegerField()
    fleet_centre = serializers.FloatField(allow_null=True, help_text="The median of the ranked hosts' mean z.")
    min_host_tasks = serializers.IntegerField(allow_null=True)
    min_effect = serializers.FloatField(allow_null=True)
    min_slowdown = serializers.FloatField(
        allow_null=True, help_text="A straggler's speed is at least this many times its hardware class's median."
    )
    alpha = serializers.FloatField(allow_null=True)
    extreme_z = serializers.FloatField(allow_null=True)


class HostRecordSerializer(serializers.Serializer[Any]):
    """One host's indicators in a snapshot (analyzer.hosts.schema.HostRecord but NOT_SERVED; a test keeps them
    in step)."""

    host = serializers.CharField()
    level = serializers.IntegerField(help_text="0 is the slowest tier; -1: too few tasks to rank.")
    straggler = serializers.BooleanField(
        help_text="Significantly slower than its hardware class, and at least min_slowdown times its median speed."
    )
    n_tasks = serializers.IntegerField(help_text="Its z-scores ranked.")
    mean = serializers.FloatField(allow_null=True, help_text="Mean z: sibling standard deviations slower.")
    std = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True, help_text="95% confidence interval of the mean.")
    ci_high = serializers.FloatField(allow_null=True)
    q05 = serializers.FloatField(allow_null=True)
    q25 = serializers.FloatField(allow_null=True)
    q50 = serializers.FloatField(allow_null=True)
    q75 = serializers.FloatField(allow_null=True)
    q95 = serializers.FloatField(allow_null=True)
    family = serializers.CharField(allow_null=True, help_text="The best-fitting distribution (Anderson-Darling).")
    shape = serializers.FloatField(allow_null=True)
    loc = serializers.FloatField(allow_null=True)
    scale = serializers.FloatField(allow_null=True)
    ad = serializers.FloatField(allow_null=True, help_text="Its Anderson-Darling A².")
    p_extreme_fitted = serializers.FloatField(allow_null=True)
    p_extreme_empirical = serializers.FloatField(allow_null=True, help_text="Share of tasks with z above extreme_z.")
    effect = serializers.FloatField(allow_null=True, help_text="Mean z minus its hardware class's centre.")
    p_value = serializers.FloatField(allow_null=True)
    p_adjusted = serializers.FloatField(allow_null=True, help_text="Benjamini-Hochberg adjusted p-value.")
    speed = serializers.FloatField(
        allow_null=True, help_text="Times the median of their sibling tasks its tasks took; null when unknown."
    )
    hw_class = serializers.CharField(allow_null=True, help_text="Its hardware class (named or learned from speeds).")
    class_hosts = serializers.IntegerField(help_text="Ranked hosts it was compared with.")
    class_speed = serializers.FloatField(allow_null=True, help_text="The class's median speed.")
    slowdown = serializers.FloatField(allow_null=True, help_text="Its speed over its class's median speed.")


class HostsSerializer(serializers.Serializer[Any]):
    snapshot = SnapshotFactsSerializer()
    count = serializers.IntegerField(help_text="Hosts matching (all, or the stragglers); `hosts` is one page.")
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    hosts = HostRecordSerializer(many=True, help_text="Slowest level first, highest mean z first within a level.")


class HistogramSerializer(serializers.Serializer[Any]):
    edges = serializers.ListField(child=serializers.FloatField(), help_text="Bin edges in z (one more than counts).")
    counts = serializers.ListField(child=serializers.IntegerField())
    expected = serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text="The fitted distribution's expected tasks per bin."
    )
    n = serializers.IntegerField()
    below = serializers.IntegerField()
    above = serializers.IntegerField()
    counted_from = serializers.ChoiceField(
        choices=["snapshot", "stored"],
        help_text="snapshot: the ranking's own counts (level-0 hosts); stored: recounted from the window's samples.",
    )


class TrendPointSerializer(serializers.Serializer[Any]):
    computed_at = serializers.DateTimeField()
    window_end = serializers.DateTimeField(allow_null=True)
    level = serializers.IntegerField()
    straggler = serializers.BooleanField()
    n_tasks = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    p_extreme = serializers.FloatField(allow_null=True)
    n_levels = serializers.IntegerField()


class TrendSerializer(serializers.Serializer[Any]):
    window = serializers.CharField()
    points = TrendPointSerializer(many=True, help_text="Oldest first.")


class HostDetailSerializer(serializers.Serializer[Any]):
    snapshot = SnapshotFactsSerializer()
    host = HostRecordSerializer()
    histogram = HistogramSerializer()
    trend = TrendSerializer(many=True, help_text="Per window, the host in each kept snapshot of the cluster.")


class HostsQuerySerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField(
        required=False, max_length=100, help_text=f"A cluster's name, or {host_selectors.NO_CLUSTER} for files."
    )
    window = serializers.CharField(required=False, max_length=16, help_text="24h or 7d (the configured windows).")


class HostsListQuerySerializer(HostsQuerySerializer):
    stragglers = serializers.BooleanField(required=False, default=False, help_text="Only the straggler hosts.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)
    offset = serializers.IntegerField(required=False, min_value=0, default=0)


def _snapshot(params: dict[str, Any]) -> host_selectors.HostSnapshot | Response:
    default = host_selectors.default_choice()
    if default is None:
        message = "No host ranking is stored yet: run manage.py rank_hosts, or wait for the hourly beat task."
        return Response(error_body("not_found", message), status=404)
    cluster = params.get("cluster") or default[0]
    window = params.get("window") or default[1]
    try:
        snapshot = host_selectors.latest_snapshot(cluster, window)
    except UnreadableResult as error:
        message = error.sentence("The next ranking replaces it (hourly, or now with manage.py rank_hosts).")
        return Response(error_body("unreadable", message), status=503)
    if snapshot is None:
        message = f"No host ranking of cluster {cluster!r} over window {window!r}."
        return Response(error_body("not_found", message, "cluster"), status=404)
    return snapshot


class HostsView(APIView):
    @extend_schema(
        operation_id="hosts_list",
        summary="The latest straggler-host snapshot of a cluster and window: its facts and hosts by level",
        description="Each cluster's hosts are ranked hourly by how their tasks' durations compare with their "
        "sibling tasks' (z-scores); level 0 is the slowest tier; a straggler is a host whose tasks ran at least "
        "min_slowdown times as long as its hardware class's median host's, significantly. Without cluster and "
        "window: the newest snapshot's cluster, shortest window.",
        parameters=[HostsListQuerySerializer],
        responses={**COMMON, 200: HostsSerializer, 400: BAD_REQUEST, 404: NO_SNAPSHOT, 503: UNREADABLE},
    )
    def get(self, request: Request) -> Response:
        query = HostsListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        found = _snapshot(params)
        if isinstance(found, Response):
            return found
        hosts: list[schema.HostRecord] = host_selectors.snapshot_hosts(found)
        if params["stragglers"]:
            hosts = [h for h in hosts if h.straggler]
        offset, limit = params["offset"], params["limit"]
        body = {
            "snapshot": host_selectors.snapshot_facts(found),
            "count": len(hosts),
            "limit": limit,
            "offset": offset,
            "hosts": hosts[offset : offset + limit],
        }
        return Response(HostsSerializer(body).data)


class HostDetailView(APIView):
    @extend_schema(
        operation_id="hosts_retrieve",
        summary="One host in the latest snapshot: indicators, level, straggler flag, histogram, fitted density, trend",
        description="The histogram counts the host's z-scores over fixed bins; `expected` is the fitted "
        "distribution's expected tasks per bin. The trend lists the host in each kept snapshot of the cluster, "
        "per window.",
        parameters=[HostsQuerySerializer],
        responses={**COMMON, 200: HostDetailSerializer, 400: BAD_REQUEST, 404: NO_SNAPSHOT, 503: UNREADABLE},
    )
    def get(self, request: Request, host: str) -> Response:
        query = HostsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        found = _snapshot(query.validated_data)
        if isinstance(found, Response):
            return found
        # PostgreSQL text cannot hold NUL, so no stored host has one.
        record = None if "\x00" in host else host_selectors.host_record(found, host)
        if record is None:
            message = f"Host {host[:300]!r} ran no task with a z-score in this snapshot."
            return Response(error_body("not_found", message, "host"), status=404)
        cluster = host_selectors.cluster_value(found.row.cluster)
        histogram = host_selectors.host_histogram(found, record)
        trend = host_selectors.host_trend(host, cluster)
        body = {
            "snapshot": host_selectors.snapshot_facts(found),
            "host": record,
            "histogram": {
                "edges": histogram.edges,
                "counts": histogram.counts,
                "expected": histogram.expected,
                "n": histogram.n,
                "below": histogram.below,
                "above": histogram.above,
                "counted_from": histogram.source,
            },
            "trend": [{"window": w, "points": points} for w, points in trend.items()],
        }
        return Response(HostDetailSerializer(body).data)
