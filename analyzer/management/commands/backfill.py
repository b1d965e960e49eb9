"""``manage.py backfill CLUSTER --since T [--until T] [--backend B] [--window H] [--enqueue] [--reanalyze]``.

Analyzes the apps a cluster's sources list as finished in a past range: each enabled source (or only those of
backend ``B``) is listed window by window (``--window`` hours, default 1), every app is recorded once exactly
as polling records it (an app polling or an earlier backfill already recorded is not analyzed again), then the
apps still waiting are analyzed here, or with ``--enqueue`` handed to the Celery workers. ``--reanalyze`` analyzes
the range's already analyzed (or failed) apps again: after an upgrade, their reports gain what the new version
computes (for example the per-host z-scores, executor anomalies and stage host times of issue 7). Source
checkpoints are not moved. Progress bars (listing, then analysis) go to stderr when it is a terminal;
``--no-progress`` hides them. ``--format text|json`` chooses the output.

Times are ISO 8601 (``2026-11-01``, ``2026-11-01T06:00:00Z``; no zone means UTC) or epoch milliseconds.
Output: with ``--format json`` one JSON Lines object per analyzed app (the shape of ``poll --format json``), else
one line per app; a summary line per source goes to stderr. Exit status: 0 every window listed; 1 some window
of some source could not be listed (the rest was done); 2 bad arguments.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

import heuristics
from analyzer.ingestion.polling import analyze_claim, backfill_windows, default_poller_id, source_backfill
from analyzer.management.commands.analyze import printable
from analyzer.management.commands.poll import analyzed_line
from analyzer.models import Cluster, Source

EXIT_LISTING_FAILED: Final = 1
EXIT_USAGE: Final = 2


def parse_time_ms(text: str) -> int:
    """Epoch ms from ``text``: ISO 8601 (UTC unless a zone is given) or an integer of epoch milliseconds."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither ISO 8601 nor epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


class Command(BaseCommand):
    help = "Analyze the apps a cluster's sources list as finished in a past range (each app once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("cluster", metavar="CLUSTER")
        parser.add_argument("--since", required=True, metavar="T", help="start of the range (ISO 8601 or epoch ms)")
        parser.add_argument("--until", metavar="T", help="end of the range, exclusive (default: now)")
        parser.add_argument("--backend", metavar="B", help="only the sources of this backend (e.g. spark-history)")
        parser.add_argument("--window", type=float, default=1.0, metavar="H", help="listing window, hours")
        parser.add_argument("--enqueue", action="store_true", help="hand the apps to the Celery workers")
        parser.add_argument(
            "--reanalyze",
            action="store_true",
            help="analyze again the range's apps already analyzed (after an upgrade: their reports gain what it adds)",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        parser.add_argument("--format", dest="output_format", choices=("text", "json"), default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            start_ms = parse_time_ms(options["since"])
            end_ms = parse_time_ms(options["until"]) if options["until"] else int(timezone.now().timestamp() * 1000)
        except ValueError as error:
            raise CommandError(str(error), returncode=EXIT_USAGE) from None
        if end_ms <= start_ms:
            raise CommandError("--until must be after --since", returncode=EXIT_USAGE)
        if options["window"] <= 0:
            raise CommandError("--window must be positive", returncode=EXIT_USAGE)
        cluster = Cluster.objects.filter(name=options["cluster"]).first()
        if cluster is None:
            raise CommandError(f"no cluster named {printable(options['cluster'])}", returncode=EXIT_USAGE)
        sources = Source.objects.filter(cluster=cluster, enabled=True).select_related("cluster")
        if options["backend"]:
            sources = sources.filter(backend=options["backend"])
        if not sources:
            raise CommandError("no enabled source matches", returncode=EXIT_USAGE)
        # The RM's views first, so the apps analyzed next get them joined.
        ordered = sorted(sources, key=lambda s: (s.backend != "yarn-rm", s.backend, s.pk))
        windows = backfill_windows(start_ms, end_ms, max(1, int(options["window"] * 3_600_000)))
        quiet = options["no_progress"]
        suite = (
            None
            if options["enqueue"]
            else heuristics.load_suite(
                user_file=settings.HINDSIGHT_HEURISTICS_FILE, profile=settings.HINDSIGHT_SEVERITY_PROFILE
            )
        )
        failed_listing = False
        for source in ordered:
            label = f"{cluster.name}/{source.backend}"
            with tqdm(total=len(windows), desc=f"{label} listing", unit="window", disable=quiet or None) as bar:
                result = source_backfill(
                    source, windows, on_window=lambda _n: bar.update(1), reanalyze=options["reanalyze"]
                )
            failed_listing = failed_listing or bool(result.errors)
            for message in result.errors[:5]:
                self.stderr.write(f"hindsight: {printable(label)}: {printable(message)}")
            analyzed = failed = 0
            if options["enqueue"]:
                from analyzer.tasks import analyze_app_task  # only this mode needs Celery

                for claim_id in result.claim_ids:
                    analyze_app_task.delay(claim_id)
            else:
                poller = default_poller_id()
                with tqdm(result.claim_ids, desc=f"{label} analysis", unit="app", disable=quiet or None) as bar:
                    for claim_id in bar:
                        outcome = analyze_claim(claim_id, poller_id=poller, suite=suite)
                        if outcome.analyzed is not None:
                            analyzed += 1
                            self.stdout.write(
                                analyzed_line(cluster.name, label, outcome.analyzed, options["output_format"])
                            )
                        elif outcome.failed or outcome.to_retry:
                            failed += 1
            done = "enqueued" if options["enqueue"] else f"analyzed {analyzed}, not analyzed {failed}"
            self.stderr.write(
                f"{printable(label)}: {result.windows} windows, {result.listed} apps listed, "
                f"{result.recorded} new, {len(result.claim_ids)} to analyze: {done}"
            )
        if failed_listing:
            raise SystemExit(EXIT_LISTING_FAILED)
