"""Operating Hindsight: the health check and the Prometheus metrics, both read at request time.

The metrics come from the database (and the broker's queue lengths) whenever they are scraped, not from
counters kept in a process, so any number of web processes answer the same and no multiprocess directory is
needed. Claim and app counts are a handful of grouped aggregate queries, never a loop over rows; the label
values (cluster names, backends) are escaped by ``prometheus_client``.

The broker is part of the health of an install that runs Celery, but not of the embedded single-machine mode
(SQLite, ``manage.py poll`` or ``poll --once`` without Celery). Setting ``HINDSIGHT_HEALTH_BROKER``:
``required`` (an unreachable broker makes ``/healthz`` fail), ``off`` (never checked) or ``auto``, the default:
required unless the database is SQLite, the embedded mode, where it is not checked.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from django.conf import settings
from django.db import connection
from django.db.models import Count, Q, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source

log = logging.getLogger(__name__)

BROKER_TIMEOUT_S: Final = 2.0
HEALTH_BROKER_MODES: Final = ("auto", "required", "off")
# Upper bounds of the analysis duration histogram, seconds.
ANALYSIS_BUCKETS_S: Final[tuple[float, ...]] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
NO_SOURCE: Final = "none"  # backend label of claims whose source was removed since
# kombu's Redis transport keeps a queue's messages of priority p > 0 under "<queue>\x06\x16<p>".
_REDIS_PRIORITY_SEP: Final = "\x06\x16"
_REDIS_PRIORITY_STEPS: Final = (3, 6, 9)


# Health


@dataclass(frozen=True)
class Health:
    """What ``/healthz`` answers: each component "ok", "unreachable" or "not checked"; never an error text."""

    database: str
    broker: str

    @property
    def ok(self) -> bool:
        return self.database == "ok" and self.broker in {"ok", "not checked"}

    def as_dict(self) -> dict[str, str]:
        return {"status": "ok" if self.ok else "unavailable", "database": self.database, "broker": self.broker}


def broker_required() -> bool:
    """Whether this install runs Celery, so that its broker is part of its health (see the module docstring)."""
    mode = str(settings.HINDSIGHT_HEALTH_BROKER).strip().lower()
    if mode not in HEALTH_BROKER_MODES:
        log.warning("HINDSIGHT_HEALTH_BROKER=%r is not one of %s; using auto", mode, ", ".join(HEALTH_BROKER_MODES))
        mode = "auto"
    if mode == "auto":
        return connection.vendor != "sqlite"
    return mode == "required"


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # any failure means unhealthy; the details go to the log, not to the caller
        log.warning("health check: the database is unreachable", exc_info=True)
        return False
    return True


def _broker_connect(url: str, timeout_s: float) -> None:
    from kombu import Connection  # imported here: only the health check needs it in a web process

    with Connection(url, connect_timeout=timeout_s, heartbeat=0, transport_options={"max_retries": 0}) as conn:
        conn.connect()
        conn.default_channel  # noqa: B018 -- Redis only talks to the server when a channel opens


def broker_ok(url: str | None = None, *, timeout_s: float = BROKER_TIMEOUT_S) -> bool:
    """Whether the Celery broker accepts a connection within about ``timeout_s`` seconds."""
    url = url if url is not None else str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    if not url:
        return False
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            _broker_connect(url, timeout_s)
            outcome.append(True)
        except Exception as error:
            # The message may name the host but kombu and redis never put the password in it; still, keep it short.
            log.warning("health check: the broker is unreachable (%s)", type(error).__name__)

    # A thread bounds the whole check, name resolution included, which socket timeouts alone do not.
    worker = threading.Thread(target=attempt, name="hindsight-broker-check", daemon=True)
    worker.start()
    worker.join(timeout_s + 1.0)
    return bool(outcome)


def health() -> Health:
    database = "ok" if database_ok() else "unreachable"
    if not broker_required():
        return Health(database=database, broker="not checked")
    return Health(database=database, broker="ok" if broker_ok() else "unreachable")


# Metrics


def celery_queue_names() -> list[str]:
    """The Celery queues this install sends tasks to: the default queue and any queue declared or routed to."""
    names = [str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery") or "celery")]
    for queue in getattr(settings, "CELERY_TASK_QUEUES", None) or ():
        name = getattr(queue, "name", queue)
        if isinstance(name, str):
            names.append(name)
    routes = getattr(settings, "CELERY_TASK_ROUTES", None)
    for route in routes.values() if isinstance(routes, dict) else ():
        if isinstance(route, dict) and isinstance(route.get("queue"), str):
            names.append(route["queue"])
    return list(dict.fromkeys(names))


def redis_queue_lengths(url: str, queues: Iterable[str], *, timeout_s: float = BROKER_TIMEOUT_S) -> dict[str, int]:
    """Messages waiting in each Celery queue of a Redis broker (every priority); raises when Redis is unreachable."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        names = list(queues)
        pipeline = client.pipeline(transaction=False)
        for name in names:
            pipeline.llen(name)
            for step in _REDIS_PRIORITY_STEPS:
                pipeline.llen(f"{name}{_REDIS_PRIORITY_SEP}{step}")
        lengths = pipeline.execute()
    finally:
        client.close()
    per_queue = 1 + len(_REDIS_PRIORITY_STEPS)
    return {name: sum(lengths[i * per_queue : (i + 1) * per_queue]) for i, name in enumerate(names)}


def _seconds_since(moment: dt.datetime | None, now: dt.datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())


class HindsightCollector(Collector):
    """Every Hindsight metric, read from the database (and the broker) at each scrape."""

    def __init__(self, *, now: dt.datetime | None = None, broker: bool | None = None) -> None:
        self._now = now  # fixed by tests; the scrape time otherwise
        self._broker = broker  # None: as the health check decides (broker_required)

    def collect(self) -> Iterator[Metric]:
        now = self._now or timezone.now()
        clusters = dict(Cluster.objects.values_list("id", "name"))
        sources = list(Source.objects.order_by("id"))
        yield from self._claims(clusters, {s.pk: s.backend for s in sources})
        yield from self._sources(clusters, sources, now)
        yield self._analysis_durations()
        if self._broker if self._broker is not None else broker_required():
            yield from self._queues()

    def _claims(self, clusters: dict[int, str], backends: dict[int, str]) -> Iterator[Metric]:
        # One grouped count over the claims; clusters and sources (a few rows) give the names, so no join is needed.
        rows = AppClaim.objects.order_by().values_list("cluster_id", "source_id", "state").annotate(n=Count("*"))
        totals: dict[tuple[str, str, str], int] = {}
        for cluster_id, source_id, state, n in rows:
            key = (clusters.get(cluster_id, str(cluster_id)), backends.get(source_id, NO_SOURCE), state)
            totals[key] = totals.get(key, 0) + n
        analyzed = CounterMetricFamily(
            "hindsight_apps_analyzed",
            "Apps fetched, analyzed and stored by polling (claims done), by cluster and the backend that listed them.",
            labels=["cluster", "backend"],
        )
        failed = CounterMetricFamily(
            "hindsight_apps_failed",
            "Apps given up on after their fetch failed (claims failed), by cluster and backend.",
            labels=["cluster", "backend"],
        )
        pending = GaugeMetricFamily(
            "hindsight_apps_pending",
            "Apps listed and not analyzed yet: state waiting (to do or to retry) or claimed (being analyzed now).",
            labels=["cluster", "backend", "state"],
        )
        pairs = sorted({(cluster, backend) for cluster, backend, _state in totals})
        for cluster, backend in pairs:
            analyzed.add_metric([cluster, backend], totals.get((cluster, backend, ClaimState.DONE), 0))
            failed.add_metric([cluster, backend], totals.get((cluster, backend, ClaimState.FAILED), 0))
            pending.add_metric([cluster, backend, "waiting"], totals.get((cluster, backend, ClaimState.RETRY), 0))
            pending.add_metric([cluster, backend, "claimed"], totals.get((cluster, backend, ClaimState.CLAIMED), 0))
        yield from (analyzed, failed, pending)

    def _sources(self, clusters: dict[int, str], sources: list[Source], now: dt.datetime) -> Iterator[Metric]:
        labels = ["cluster", "backend", "source"]
        enabled = GaugeMetricFamily(
            "hindsight_source_enabled", "1 when the source is polled, 0 when disabled.", labels=labels
        )
        erring = GaugeMetricFamily(
            "hindsight_source_error", "1 when the last poll failed (the Sources page shows why).", labels=labels
        )
        success_age = GaugeMetricFamily(
            "hindsight_source_last_success_age_seconds",
            "Seconds since the source's last successful poll; absent when it never succeeded.",
            labels=labels,
        )
        lag = GaugeMetricFamily(
            "hindsight_source_checkpoint_lag_seconds",
            "Seconds between now and the source's checkpoint (every app finished before it is recorded); "
            "absent before its first complete window.",
            labels=labels,
        )
        for source in sources:
            values = [clusters.get(source.cluster_id, str(source.cluster_id)), source.backend, str(source.pk)]
            enabled.add_metric(values, 1 if source.enabled else 0)
            erring.add_metric(values, 1 if source.last_error else 0)
            age = _seconds_since(source.last_success_at, now)
            if age is not None:
                success_age.add_metric(values, age)
            if source.checkpoint_ms is not None:
                lag.add_metric(values, max(0.0, now.timestamp() - source.checkpoint_ms / 1000))
        yield from (enabled, erring, success_age, lag)

    def _analysis_durations(self) -> Metric:
        # One pass: a filtered count per bucket (cumulative, as Prometheus wants them), the count and the sum. Only
        # analysis_ms is read, so an index on it lets PostgreSQL answer from the index alone.
        bounds_ms = [round(b * 1000) for b in ANALYSIS_BUCKETS_S]
        aggregates: dict[str, Any] = {
            f"le_{i}": Count("analysis_ms", filter=Q(analysis_ms__lte=bound)) for i, bound in enumerate(bounds_ms)
        }
        row = AnalyzedApp.objects.order_by().aggregate(
            **aggregates, total=Count("analysis_ms"), sum_ms=Sum("analysis_ms")
        )
        buckets = [(_bucket_label(b), row[f"le_{i}"]) for i, b in enumerate(ANALYSIS_BUCKETS_S)]
        buckets.append(("+Inf", row["total"]))
        return HistogramMetricFamily(
            "hindsight_analysis_duration_seconds",
            "Fetch, analysis and storage time of each analyzed app's last run.",
            buckets=buckets,
            sum_value=(row["sum_ms"] or 0) / 1000,
        )

    def _queues(self) -> Iterator[Metric]:
        url = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
        if not url.startswith(("redis://", "rediss://")):
            # Other brokers (RabbitMQ) report their queue depths themselves (its Prometheus plugin); not repeated here.
            return
        up = GaugeMetricFamily("hindsight_broker_up", "1 when the Redis broker answered this scrape.")
        try:
            lengths = redis_queue_lengths(url, celery_queue_names())
        except Exception as error:
            log.warning("metrics: the broker is unreachable (%s)", type(error).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        depth = GaugeMetricFamily(
            "hindsight_queue_depth", "Celery tasks waiting in the broker, by queue.", labels=["queue"]
        )
        for name, length in lengths.items():
            depth.add_metric([name], length)
        yield depth


def _bucket_label(bound: float) -> str:
    return str(float(bound)) if not math.isinf(bound) else "+Inf"


__all__ = [
    "ANALYSIS_BUCKETS_S",
    "Health",
    "HindsightCollector",
    "broker_ok",
    "broker_required",
    "celery_queue_names",
    "health",
    "redis_queue_lengths",
]
