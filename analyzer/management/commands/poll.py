"""``manage.py poll [--once | --passes N] [--interval S] [--format text|json]``: poll every enabled source.

``--once`` makes one pass over every enabled source of every cluster. Without it the command loops, without
Celery (for small installs): a pass, then a sleep until the next source is due (each source's
``poll_interval_s``; ``--interval S`` sleeps S seconds instead), until ``--passes N`` passes are done or
SIGTERM / Ctrl-C, which lets the current pass finish and then exits 0.

The contract scripts rely on:

* Each app analyzed in this pass is printed once: with ``--format json`` one JSON Lines object, the shape of
  ``analyze --format json`` (``AnalysisReport.to_json_dict`` plus ``stored_id``) plus ``cluster``; with text one
  line. Apps analyzed by an earlier pass (or another poller) print nothing.
* A source that cannot be listed gives one stderr line ``hindsight: <cluster>/<backend>: <reason>`` (secrets
  masked); the other sources still run.
* Exit status: 0 every source listed; 1 some source could not be listed, or the database failed; 2 bad
  arguments; 3 bad heuristics configuration (nothing polled).
* The loop survives a database outage: the pass is abandoned with one stderr line, and the next pass (the
  connection opened again) resumes from the checkpoints and claims, so nothing is lost or done twice.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Final

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.utils import timezone

import heuristics
from analyzer.ingestion.polling import AnalyzedAppResult, PollResult, poll_sources, seconds_until_due
from analyzer.management.commands.analyze import jobinfo_config_or_exit, printable

EXIT_SOURCE_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_BAD_CONFIG: Final = 3
_JSON_OPTIONS: Final = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
IDLE_S: Final = 10.0  # the loop's sleep when no source is enabled (the default poll interval)


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT while inside, so the loop can finish its pass; handlers restored after."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals only reach the main thread
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


class Command(BaseCommand):
    help = (
        "Poll every enabled cluster source: analyze and store each newly finished app, printing one line (or "
        "with --format json one JSON object) per app analyzed. With --once one pass, exit 1 when some source "
        "could not be listed ('hindsight: <cluster>/<backend>: <reason>' on stderr); without it, a loop until "
        "--passes N or SIGTERM/Ctrl-C (the current pass finishes, exit 0)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--once", action="store_true", help="one pass over every source, then exit (no broker needed)"
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            metavar="S",
            help="loop: sleep S seconds between passes (default: until the next source is due)",
        )
        parser.add_argument("--passes", type=int, default=None, metavar="N", help="loop: stop after N passes")
        parser.add_argument(
            "--format",
            dest="output_format",
            choices=("text", "json"),
            default="text",
            help="text: one line per analyzed app; json: JSON Lines, one object per analyzed app",
        )

    def error(self, where: object, reason: object) -> None:
        self.stderr.write(f"hindsight: {printable(where)}: {printable(reason)}", style_func=lambda s: s)

    def handle(
        self,
        *args: Any,
        once: bool,
        interval: float | None,
        passes: int | None,
        output_format: str,
        **options: Any,
    ) -> None:
        if interval is not None and interval < 0:
            raise CommandError("--interval must be 0 or more seconds", returncode=EXIT_USAGE)
        if passes is not None and passes < 1:
            raise CommandError("--passes must be 1 or more", returncode=EXIT_USAGE)
        jobinfo_config_or_exit(self.error)  # a bad file stops here, not once per app
        try:
            if once:
                try:
                    failed = self._pass(output_format)
                except DatabaseError as error:
                    self.error("database", error)
                    raise SystemExit(EXIT_SOURCE_FAILED) from None
                if failed:
                    raise SystemExit(EXIT_SOURCE_FAILED)
            else:
                self._loop(interval, passes, output_format)
        except heuristics.ConfigError as exc:
            self.error("heuristics configuration", exc)
            raise SystemExit(EXIT_BAD_CONFIG) from None

    def _loop(self, interval: float | None, passes: int | None, output_format: str) -> None:
        done = 0
        with stop_on_signals() as stop:
            while not stop.is_set():
                try:
                    self._pass(output_format)
                except DatabaseError as error:
                    self.error("database", error)
                    connections.close_all()  # the next pass opens new connections
                done += 1
                if passes is not None and done >= passes:
                    break
                wait = interval if interval is not None else seconds_until_due(timezone.now(), idle_s=IDLE_S)
                stop.wait(wait)  # a signal wakes it at once

    def _pass(self, output_format: str) -> int:
        """One pass over every source; the number of sources that could not be listed."""
        failed = 0
        # Each app is printed as soon as it is stored: a poller killed mid-pass loses no line of what it stored.
        for result in poll_sources(on_analyzed=lambda result, done: self._print(result, done, output_format)):
            if result.error is not None:
                self.error(result.label, result.error)
                failed += 1
        return failed

    def _print(self, result: PollResult, done: AnalyzedAppResult, output_format: str) -> None:
        self.stdout.write(analyzed_line(result.cluster, result.label, done, output_format))
        self.stdout.flush()


def analyzed_line(cluster: str, label: str, done: AnalyzedAppResult, output_format: str) -> str:
    """What a polling command prints of one analyzed app: a JSON Lines object or a line of text."""
    report = done.report
    if output_format == "json":
        record = report.to_json_dict()
        record["stored_id"] = done.stored_id
        record["cluster"] = cluster
        return orjson.dumps(record, option=_JSON_OPTIONS).decode()
    attempt = f" attempt {printable(report.attempt_id)}" if report.attempt_id else ""
    return (
        f"{printable(label)}: {printable(report.app_id)}{attempt}: {printable(report.app_name)}: "
        f"{report.severity_name}, score {report.score}, stored as analyzed app #{done.stored_id}"
    )
