"""``manage.py rank_hosts [--window 24h|7d ...] [--end now|latest|ISO] [--cluster NAME] [--backfill [--batch N]]``:
store straggler-host snapshots (issue 7) from the z-score samples stored with each analyzed app.

Prints one line per cluster and window: the hosts ranked, levels, stragglers and seconds, or why nothing was
stored (no tasks in the window). ``--end latest`` ends each cluster's windows at its last stored app's end: for
logs older than the windows, such as the shipped samples. ``--cluster (files)`` ranks the apps analyzed from
files. The hourly Celery beat task ``analyzer.tasks.rank_hosts_task`` does the same with ``--end now``.
``--backfill [--batch N]`` ranks past windows instead: every window end (on the shortest window's grid, e.g. each
midnight UTC for 24h) after which some analyzed app has no host evidence yet, at most N ends per cluster per run
(``HINDSIGHT_HOSTS_BACKFILL_BATCH``, 50), oldest first; it says how many remain, so run it again until none does.
Exit status: 0 (also when a window had no tasks), 1 on a bad argument.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analyzer.hosts.selectors import NO_CLUSTER, parse_window
from analyzer.hosts.services import (
    End,
    SnapshotOutcome,
    UnknownCluster,
    backfill_snapshots,
    configured_windows,
    rank_hosts_snapshots,
)
from analyzer.selectors.apps import parse_instant


class Command(BaseCommand):
    help = "Rank every cluster's hosts over the configured windows and store a straggler snapshot of each."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--window",
            action="append",
            default=None,
            help="A window such as 24h or 7d (repeatable; default HINDSIGHT_HOSTS_WINDOWS, 24h and 7d).",
        )
        parser.add_argument(
            "--end",
            default="now",
            help="Where the windows end: now (default), latest (each cluster's last stored app end) or an ISO "
            "date-time.",
        )
        parser.add_argument(
            "--cluster", default=None, help=f"Only this cluster; {NO_CLUSTER} for apps analyzed from files."
        )
        parser.add_argument(
            "--backfill",
            action="store_true",
            help="Rank the past windows not yet ranked (every configured window at each), oldest first.",
        )
        parser.add_argument(
            "--batch",
            type=int,
            default=None,
            help="With --backfill: at most this many window ends per cluster (default HINDSIGHT_HOSTS_BACKFILL_BATCH).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["backfill"]:
            self._backfill(options)
            return
        if options["batch"] is not None:
            raise CommandError("--batch goes with --backfill")
        windows = options["window"] or list(configured_windows())
        try:
            for window in windows:
                parse_window(window)
        except ValueError as error:
            raise CommandError(str(error)) from None
        end_text = str(options["end"]).strip()
        end: End
        if end_text in ("now", "latest"):
            end = "now" if end_text == "now" else "latest"
        else:
            parsed = parse_instant(end_text)
            if parsed is None:
                raise CommandError(f"--end is now, latest or an ISO date-time, not {end_text[:60]!r}")
            end = parsed
        try:
            outcomes = rank_hosts_snapshots(windows=windows, end=end, cluster=options["cluster"])
        except UnknownCluster as error:
            raise CommandError(str(error)) from None
        self._report(outcomes)
        if all(o.snapshot is None for o in outcomes):
            hint = " Try --end latest for older logs." if end == "now" else ""
            self.stdout.write(
                "No snapshot was stored: no analyzed app with tasks on several hosts ended in the windows "
                f"(local-mode apps have none).{hint}"
            )

    def _backfill(self, options: dict[str, Any]) -> None:
        if options["window"] or str(options["end"]).strip() != "now":
            raise CommandError("--backfill ranks every configured window at past ends: no --window or --end")
        if options["batch"] is not None and options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        try:
            outcomes, plans = backfill_snapshots(batch=options["batch"], cluster=options["cluster"])
        except UnknownCluster as error:
            raise CommandError(str(error)) from None
        self._report(outcomes)
        if not plans:
            self.stdout.write("Nothing to backfill: no analyzed app has tasks on several hosts.")
        for plan in plans:
            label = plan.cluster if plan.cluster is not None else "apps read from files"
            more = f"; {plan.remaining} more remain: run --backfill again" if plan.remaining else "; none remains"
            self.stdout.write(
                f"{label}: backfilled {len(plan.ends)} window end{'s' if len(plan.ends) != 1 else ''}{more}."
            )

    def _report(self, outcomes: list[SnapshotOutcome]) -> None:
        for o in outcomes:
            where = f"{o.cluster_label}, {o.window}"
            if o.window_end is not None:
                where += f" ending {o.window_end:%Y-%m-%d %H:%M} UTC"
            s = o.snapshot
            if s is None:
                self.stdout.write(f"{where}: nothing stored ({o.reason}).")
                continue
            pruned = f"; pruned {o.pruned} older" if o.pruned else ""
            self.stdout.write(
                f"{where}: snapshot {s.pk}: {s.n_ranked} of {s.n_hosts} hosts ranked in {s.n_levels} levels, "
                f"{s.n_stragglers} straggler{'s' if s.n_stragglers != 1 else ''}, {s.n_tasks} tasks of "
                f"{s.n_apps} app{'s' if s.n_apps != 1 else ''}, {o.seconds:.1f} s{pruned}."
            )
