"""``manage.py gate --app-id X | --job-def-id Y | --flow-def-id F | --template T [--cluster C]
[--max-severity MODERATE] [--heuristics a,b] [--allow-failed]``: a CI gate on an analyzed app, read from the
database.

The contract CI scripts rely on: exit 0 when no judged finding is above ``--max-severity`` and no judged app FAILED
(one ``pass: ...`` line on stdout), 1 when some are or one FAILED (one ``fail: ...`` line on stdout naming them; a
failed app as ``the app FAILED: <class>: <message>``; ``--allow-failed`` judges a failed app's findings only), 2
on an error: bad arguments, an unknown heuristic code, nothing analyzed yet, or a database failure (one
``hindsight: ...`` line on stderr).
``--job-def-id`` and ``--template`` judge the latest ended app carrying that key; ``--flow-def-id`` judges every app
of the flow's latest run (the flow execution whose last app ended last), and a ``fail`` line names each finding's
app. The same verdict as ``GET /api/v1/gate``.
"""

from __future__ import annotations

import sys
from typing import Any, Final, NoReturn

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError

from analyzer.management.commands.analyze import printable
from analyzer.models import Severity
from analyzer.selectors import gate as gate_selectors

EXIT_FAIL: Final = 1
EXIT_ERROR: Final = 2


def _usage_error(message: str) -> NoReturn:
    """Argument errors exit 2 with one line, also when the command is called from code (tests, scripts)."""
    sys.stderr.write(f"hindsight: gate: {message}\n")
    raise SystemExit(EXIT_ERROR)


class Command(BaseCommand):
    help = "Pass (exit 0) or fail (exit 1) an analyzed app or flow run against a maximum severity; exit 2 on an error."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        setattr(parser, "error", _usage_error)  # noqa: B010 - argparse's error() prints usage on two lines
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--app-id", help="An app id, with an application_/job_ prefix or none.")
        target.add_argument("--job-def-id", help="Judge the latest run of this job definition.")
        target.add_argument("--flow-def-id", help="Judge every app of this flow definition's latest run.")
        target.add_argument("--template", help="Judge the latest run of this template key.")
        parser.add_argument("--cluster", default="", help="Only this cluster's apps.")
        parser.add_argument("--max-severity", default="MODERATE", help="Highest passing severity (default MODERATE).")
        parser.add_argument("--heuristics", default="", help="Comma-separated heuristic codes to judge (default all).")
        parser.add_argument(
            "--allow-failed",
            action="store_true",
            help="Do not fail an app whose status is FAILED (judge its findings only).",
        )

    def _error(self, message: str) -> NoReturn:
        self.stderr.write(f"hindsight: gate: {printable(message)}")
        raise SystemExit(EXIT_ERROR)

    def handle(self, *args: Any, **options: Any) -> None:
        level = gate_selectors.parse_severity(options["max_severity"])
        if level is None:
            self._error(
                f"unknown --max-severity {options['max_severity']!r}: use one of "
                + ", ".join(s.name for s in Severity)
                + " or 0-4"
            )
        codes = [code.strip() for code in options["heuristics"].split(",") if code.strip()]
        known = gate_selectors.heuristic_codes() if codes else None
        unknown = [code for code in codes if known is not None and code not in known]
        if unknown:
            self._error(f"unknown heuristic code(s): {', '.join(unknown)}")
        targets = {name: (options[name] or "").strip() for name in ("app_id", "job_def_id", "flow_def_id", "template")}
        if not any(targets.values()):
            self._error("give a non-empty --app-id, --job-def-id, --flow-def-id or --template")
        try:
            target = gate_selectors.gate_target(**targets, cluster=options["cluster"].strip())
            if target is None:
                given = next(f"--{k.replace('_', '-')} {v!r}" for k, v in targets.items() if v)
                what = "flow run" if targets["flow_def_id"] else "app"
                self._error(f"no analyzed {what} matches {given}: it is not analyzed yet, or the value is wrong")
            verdict = gate_selectors.gate_verdict(
                target=target, max_severity=level, heuristics=codes, allow_failed=options["allow_failed"]
            )
        except DatabaseError as exc:
            self._error(f"database error: {exc}")
        self.stdout.write(printable(verdict.reason))
        if not verdict.passed:
            raise SystemExit(EXIT_FAIL)
