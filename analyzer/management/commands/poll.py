"""``manage.py poll --once [--format text|json]``: one pass over every enabled source of every cluster.

The contract scripts rely on:

* Each app analyzed in this pass is printed once: with ``--format json`` one JSON Lines object, the shape of
  ``analyze --format json`` (``AnalysisReport.to_json_dict`` plus ``stored_id``) plus ``cluster``; with text one
  line. Apps analyzed by an earlier pass (or another poller) print nothing.
* A source that cannot be listed gives one stderr line ``hindsight: <cluster>/<backend>: <reason>`` (secrets
  masked); the other sources still run.
* Exit status: 0 every source listed; 1 some source could not be listed; 2 without ``--once`` (the polling loop
  runs under Celery, not yet available); 3 bad heuristics configuration (nothing polled).
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from django.core.management.base import BaseCommand, CommandParser

import heuristics
from analyzer.management.commands.analyze import printable
from analyzer.polling import AnalyzedAppResult, PollResult, poll_sources

EXIT_SOURCE_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_BAD_CONFIG: Final = 3
_JSON_OPTIONS: Final = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


class Command(BaseCommand):
    help = (
        "Poll every enabled cluster source once: analyze and store each newly finished app, printing one line "
        "(or with --format json one JSON object) per app analyzed in this pass. Exit 1 when some source could "
        "not be listed ('hindsight: <cluster>/<backend>: <reason>' on stderr)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one pass over every source, without a broker")
        parser.add_argument(
            "--format",
            dest="output_format",
            choices=("text", "json"),
            default="text",
            help="text: one line per analyzed app; json: JSON Lines, one object per analyzed app",
        )

    def error(self, where: object, reason: object) -> None:
        self.stderr.write(f"hindsight: {printable(where)}: {printable(reason)}", style_func=lambda s: s)

    def handle(self, *args: Any, once: bool, output_format: str, **options: Any) -> None:
        if not once:
            self.stderr.write("polling without --once runs under Celery (not yet available); use --once")
            raise SystemExit(EXIT_USAGE)
        failed = 0
        try:
            for result in poll_sources():
                if result.error is not None:
                    self.error(result.label, result.error)
                    failed += 1
                for done in result.analyzed:
                    self._print(result, done, output_format)
        except heuristics.ConfigError as exc:
            self.error("heuristics configuration", exc)
            raise SystemExit(EXIT_BAD_CONFIG) from None
        if failed:
            raise SystemExit(EXIT_SOURCE_FAILED)

    def _print(self, result: PollResult, done: AnalyzedAppResult, output_format: str) -> None:
        report = done.report
        if output_format == "json":
            record = report.to_json_dict()
            record["stored_id"] = done.stored_id
            record["cluster"] = result.cluster
            self.stdout.write(orjson.dumps(record, option=_JSON_OPTIONS).decode())
        else:
            attempt = f" attempt {printable(report.attempt_id)}" if report.attempt_id else ""
            self.stdout.write(
                f"{printable(result.label)}: {printable(report.app_id)}{attempt}: {printable(report.app_name)}: "
                f"{report.severity_name}, score {report.score}, stored as analyzed app #{done.stored_id}"
            )
        self.stdout.flush()
