"""analyzer.hosts.services: snapshots built from the z-score samples stored per app, the command, the beat task."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import numpy as np
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings
from factories import NOW, add_host_tasks, make_app

from analysis.pipeline import analyze
from analyzer.hosts import selectors as host_selectors
from analyzer.hosts import services as host_services
from analyzer.models import AnalyzedApp, AppHostTasks, Cluster, HostRank, HostRankingSnapshot
from analyzer.services import report_store
from analyzer.tasks import rank_hosts_task
from appmodel import SparkApp, StageAttempt, TaskColumns, TaskStatus

pytestmark = pytest.mark.django_db


def fleet(
    *,
    cluster: Cluster | None = None,
    hosts: int = 12,
    apps: int = 4,
    slow: str = "node-07",
    ended: dt.datetime = NOW,
    seed: int = 0,
) -> list[AnalyzedApp]:
    """Apps whose tasks ran on every host, each host's z-scores around 0 except ``slow``'s, 1.5 higher."""
    rng = np.random.default_rng(seed)
    stored = []
    for a in range(apps):
        app = make_app(cluster=cluster, end_time=ended - dt.timedelta(minutes=a))
        for h in range(hosts):
            host = f"node-{h:02d}"
            add_host_tasks(app, host, rng.normal(1.5 if host == slow else 0.0, 1.0, 40))
        stored.append(app)
    return stored


def test_a_fleet_with_one_slow_host_gives_it_level_zero_and_the_straggler_flag() -> None:
    apps = fleet()
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    snapshot = outcome.snapshot
    assert snapshot is not None
    assert (snapshot.n_hosts, snapshot.n_ranked, snapshot.n_apps, snapshot.n_tasks) == (12, 12, 4, 12 * 4 * 40)
    assert snapshot.n_stragglers == 1
    slow = HostRank.objects.get(snapshot=snapshot, host="node-07")
    assert (slow.level, slow.straggler) == (0, True)
    assert not HostRank.objects.filter(snapshot=snapshot, straggler=True).exclude(host="node-07").exists()
    assert snapshot.window_end == NOW
    assert snapshot.window_start == NOW - dt.timedelta(hours=24)
    # Each covered app's share of task time on the straggler: one host of 12 with equal time per host.
    assert AnalyzedApp.objects.get(pk=apps[0].pk).straggler_task_share == pytest.approx(1 / 12)


def test_windows_select_apps_by_their_end() -> None:
    fleet(ended=NOW - dt.timedelta(days=3))  # in the 7-day window only
    fleet(ended=NOW, slow="node-02", seed=1)
    outcomes = {o.window: o for o in host_services.rank_hosts_snapshots(now=NOW, windows=["24h", "7d"])}
    assert outcomes["24h"].snapshot is not None
    assert outcomes["7d"].snapshot is not None
    assert (outcomes["24h"].snapshot.n_apps, outcomes["7d"].snapshot.n_apps) == (4, 8)
    day_stragglers = set(HostRank.objects.filter(snapshot=outcomes["24h"].snapshot, straggler=True).values_list("host"))
    assert day_stragglers == {("node-02",)}


def test_a_window_without_tasks_stores_nothing_and_says_so() -> None:
    fleet(ended=NOW - dt.timedelta(days=30))
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    assert outcome.snapshot is None
    assert outcome.reason == "no tasks in the window"
    assert not HostRankingSnapshot.objects.exists()


def test_end_latest_ranks_old_logs_at_their_last_app_end() -> None:
    old = NOW - dt.timedelta(days=400)
    fleet(ended=old)
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"], end="latest")
    assert outcome.snapshot is not None
    assert outcome.snapshot.window_end == old
    assert outcome.snapshot.computed_at == NOW


def test_each_cluster_is_ranked_on_its_own_and_files_form_their_own_fleet() -> None:
    prod = Cluster.objects.create(name="prod")
    fleet(cluster=prod, slow="node-03")
    fleet(cluster=None, slow="node-09", seed=2)
    outcomes = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    by_cluster = {o.cluster: o.snapshot for o in outcomes}
    assert set(by_cluster) == {None, "prod"}
    flagged = {
        name: set(HostRank.objects.filter(snapshot=s, straggler=True).values_list("host", flat=True))
        for name, s in by_cluster.items()
    }
    assert flagged == {"prod": {"node-03"}, None: {"node-09"}}
    only = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"], cluster="prod")
    assert [o.cluster for o in only] == ["prod"]
    with pytest.raises(host_services.UnknownCluster):
        host_services.rank_hosts_snapshots(now=NOW, windows=["24h"], cluster="nope")


@override_settings(HINDSIGHT_HOSTS_KEEP_SNAPSHOTS=2)
def test_only_the_newest_snapshots_per_cluster_and_window_are_kept() -> None:
    fleet()
    for hour in range(4):
        host_services.rank_hosts_snapshots(now=NOW + dt.timedelta(hours=hour), windows=["24h", "7d"])
    kept = HostRankingSnapshot.objects.filter(window="24h").order_by("computed_at")
    assert [s.computed_at for s in kept] == [NOW + dt.timedelta(hours=2), NOW + dt.timedelta(hours=3)]
    assert HostRankingSnapshot.objects.filter(window="7d").count() == 2
    assert HostRank.objects.count() == 4 * 12  # the pruned snapshots' rows went with them


@override_settings(HINDSIGHT_HOSTS_MAX_TASKS_PER_HOST=100)
def test_long_windows_cap_the_z_scores_per_host_but_count_every_task() -> None:
    apps = fleet(apps=5)  # 200 z-scores per host
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["7d"])
    # Only the shortest window's ranking (right after the app ended) sets the apps' straggler share.
    assert AnalyzedApp.objects.get(pk=apps[0].pk).straggler_task_share is None
    assert outcome.snapshot is not None
    assert outcome.snapshot.n_tasks == 12 * 5 * 40
    assert set(HostRank.objects.filter(snapshot=outcome.snapshot).values_list("n_tasks", flat=True)) == {100}


def test_the_trend_and_histogram_of_a_straggler_host_come_from_its_snapshots() -> None:
    fleet()
    for hour in range(3):
        host_services.rank_hosts_snapshots(now=NOW + dt.timedelta(hours=hour), windows=["24h"])
    trend = host_selectors.host_trend("node-07", host_selectors.NO_CLUSTER)
    assert [p["level"] for p in trend["24h"]] == [0, 0, 0]
    assert [p["computed_at"] for p in trend["24h"]] == [NOW + dt.timedelta(hours=h) for h in range(3)]
    snapshot = host_selectors.latest_snapshot(host_selectors.NO_CLUSTER, "24h")
    assert snapshot is not None
    record = host_selectors.host_record(snapshot, "node-07")
    assert record is not None
    histogram = host_selectors.host_histogram(snapshot, record)
    assert histogram.source == "snapshot"
    assert sum(histogram.counts) + histogram.below + histogram.above == 160
    expected = [e for e in histogram.expected if e is not None]
    assert sum(expected) == pytest.approx(160, rel=0.1)  # the fitted density, scaled to the host's tasks
    fast = host_selectors.host_record(snapshot, "node-00")
    assert fast is not None
    assert fast.level > 0
    recounted = host_selectors.host_histogram(snapshot, fast)  # not on level 0: recounted from the stored samples
    assert recounted.source == "stored"
    assert recounted.n == 160


def test_an_analyzed_app_stores_its_host_samples_and_analyzing_it_again_replaces_them() -> None:
    rng = np.random.default_rng(3)
    hosts = ["w1", "w2", "w3"]
    host_col = np.repeat(np.arange(3), 30)
    duration = rng.integers(900, 1100, 90) + np.where(host_col == 2, 2000, 0)
    tasks = TaskColumns.from_columns(
        {
            "task_id": np.arange(90),
            "host": host_col,
            "status": [TaskStatus.SUCCESS] * 90,
            "launch_ms": np.full(90, 1_700_000_000_000),
            "finish_ms": 1_700_000_000_000 + duration,
            "duration_ms": duration,
        }
    )
    app = SparkApp(app_id="app-hosts", hosts=hosts, stages={(0, 0): StageAttempt(0, 0, tasks=tasks)})
    app.environment.spark_properties["spark.master"] = "spark://10.0.0.1:7077"
    app.end_ms = 1_700_000_100_000
    prod = Cluster.objects.create(name="prod")

    class NoHeuristics:
        def evaluate(self, _app: object) -> list:
            return []

    report = analyze(app, NoHeuristics())
    assert [row.host for row in report.host_tasks] == hosts
    stored = report_store(report=report, source="/logs/app-hosts", extra={"cluster": prod})
    rows = AppHostTasks.objects.filter(app=stored).order_by("host")
    assert [(r.host, r.n_tasks, r.cluster_id, r.end_time) for r in rows] == [
        (h, 30, prod.pk, dt.datetime(2023, 11, 14, 22, 15, tzinfo=dt.UTC)) for h in hosts
    ]
    assert np.frombuffer(bytes(rows[2].z), dtype="<f4").min() > 0  # the slow host's tasks are above the mean
    report_store(report=report, source="/logs/app-hosts", extra={"cluster": prod})
    assert AppHostTasks.objects.filter(app=stored).count() == 3


def test_the_command_prints_each_snapshots_hosts_levels_and_stragglers() -> None:
    fleet(ended=NOW - dt.timedelta(days=400))
    out = StringIO()
    call_command("rank_hosts", "--window", "24h", "--end", "latest", stdout=out)
    text = out.getvalue()
    snapshot = HostRankingSnapshot.objects.get()
    assert f"apps read from files, 24h ending {snapshot.window_end:%Y-%m-%d %H:%M} UTC" in text
    assert f"12 of 12 hosts ranked in {snapshot.n_levels} levels, 1 straggler, 1920 tasks of 4 apps" in text


def test_the_command_says_when_nothing_was_stored_and_refuses_bad_arguments() -> None:
    out = StringIO()
    call_command("rank_hosts", stdout=out)
    assert "No snapshot was stored" in out.getvalue()
    assert "24h ending" in out.getvalue()
    assert "nothing stored (no tasks in the window)" in out.getvalue()
    with pytest.raises(CommandError, match="window"):
        call_command("rank_hosts", "--window", "soon")
    with pytest.raises(CommandError, match="--end"):
        call_command("rank_hosts", "--end", "yesterday")
    with pytest.raises(CommandError, match="no cluster"):
        call_command("rank_hosts", "--cluster", "nope")


def test_beat_ranks_hosts_hourly_and_the_task_reports_each_snapshot() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["rank-hosts"]
    assert (entry["task"], entry["schedule"]) == ("analyzer.tasks.rank_hosts_task", 3600.0)
    fleet(ended=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    result = rank_hosts_task()
    assert [(s["window"], s["stragglers"]) for s in result["snapshots"]] == [("24h", 1), ("7d", 1)]


def test_backfill_ranks_every_past_window_in_bounded_batches_so_old_apps_get_host_evidence() -> None:
    days = [fleet(ended=NOW - dt.timedelta(days=d), seed=d) for d in (10, 6, 3)]
    out = StringIO()
    call_command("rank_hosts", "--backfill", "--batch", "2", stdout=out)
    assert "apps read from files: backfilled 2 window ends; 1 more remain: run --backfill again." in out.getvalue()
    out = StringIO()
    call_command("rank_hosts", "--backfill", "--batch", "2", stdout=out)
    assert "backfilled 1 window end; none remains." in out.getvalue()
    for apps in days:
        for app in apps:
            assert AnalyzedApp.objects.get(pk=app.pk).straggler_task_share == pytest.approx(1 / 12)
    ends = sorted(HostRankingSnapshot.objects.filter(window="24h").values_list("window_end", flat=True))
    assert [e.date() for e in ends] == [(NOW - dt.timedelta(days=d)).date() + dt.timedelta(days=1) for d in (10, 6, 3)]
    assert all(e.time() == dt.time(0, 0) for e in ends)  # the shortest window's grid: each midnight UTC
    # Nothing remains: a third run ranks nothing; the page opens on the window that ends last.
    out = StringIO()
    call_command("rank_hosts", "--backfill", stdout=out)
    assert "backfilled 0 window ends; none remains." in out.getvalue()
    latest = host_selectors.latest_snapshot(host_selectors.NO_CLUSTER, "24h")
    assert latest is not None
    assert latest.row.window_end == max(ends)


def test_backfill_takes_no_window_or_end_and_a_batch_needs_backfill() -> None:
    with pytest.raises(CommandError, match="--backfill ranks every configured window"):
        call_command("rank_hosts", "--backfill", "--window", "24h")
    with pytest.raises(CommandError, match="--batch goes with --backfill"):
        call_command("rank_hosts", "--batch", "3")


def test_hosts_of_an_older_slower_generation_named_by_pattern_are_compared_with_each_other() -> None:
    rng = np.random.default_rng(3)
    for a in range(4):
        app = make_app(end_time=NOW - dt.timedelta(minutes=a))
        for h in range(16):
            old, broken = h >= 10, h == 11
            z = rng.normal(2.0 if old else 0.0, 1.0, 40) + (2.0 if broken else 0.0)
            add_host_tasks(app, f"{'old' if old else 'new'}-{h:02d}", z)
    with override_settings(HINDSIGHT_HOSTS_CLASSES="old-*=gen0, new-*=gen1"):
        [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    data = outcome.snapshot.snapshot
    assert {r["hw_class"] for r in data["hosts"]} == {"gen0", "gen1"}
    assert [r["host"] for r in data["hosts"] if r["straggler"]] == ["old-11"]


def test_a_malformed_host_class_setting_is_a_clear_error() -> None:
    with override_settings(HINDSIGHT_HOSTS_CLASSES="old-*"), pytest.raises(ValueError, match="glob=class pairs"):
        host_services.class_patterns()


def test_hosts_whose_samples_were_stored_before_speeds_existed_are_not_called_stragglers() -> None:
    rng = np.random.default_rng(4)
    for a in range(4):
        app = make_app(end_time=NOW - dt.timedelta(minutes=a))
        for h in range(12):
            add_host_tasks(app, f"node-{h:02d}", rng.normal(1.5 if h == 7 else 0.0, 1.0, 40), log_ratio=None)
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    assert outcome.snapshot.n_stragglers == 0
    assert all(r["speed"] is None for r in outcome.snapshot.snapshot["hosts"])


def test_backfill_without_any_host_tasks_says_there_is_nothing_to_do() -> None:
    out = StringIO()
    call_command("rank_hosts", "--backfill", stdout=out)
    assert "Nothing to backfill" in out.getvalue()
