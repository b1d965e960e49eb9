"""``manage.py analyze PATH [PATH ...] [--format text|json] [--no-store]``: analyze Spark event logs and MapReduce
job histories.

The contract CI scripts rely on:

* Each PATH is a Spark event-log file, a MapReduce ``.jhist`` job-history file (its ``<job id>_conf.xml`` read from
  beside it), or a directory, scanned for both (a JobHistory Server's ``done`` and ``done_intermediate`` trees
  included). Apps are read, analyzed, printed and stored one at a time, so memory stays bounded by one app.
* A MapReduce job prints the same JSON object as a Spark app, with ``app_type`` ``MAPREDUCE``, its map and reduce
  phases as ``stages`` 0 and 1, and ``spark_version`` null.
* ``--format json`` prints JSON Lines: one object per application (``AnalysisReport.to_json_dict`` lists the
  keys) plus ``stored_id`` (the stored app's id, null with ``--no-store``).
* ``--no-store`` never touches the database (works with no database configured).
* Errors go to stderr, one line each: ``hindsight: <path>: <reason>``. The other inputs are still analyzed. Only
  regular files are opened (a FIFO, socket or device is ``not a regular file``); a directory is scanned down to
  16 levels (``fetchers.eventlog.layout.MAX_SCAN_DEPTH``, deeper ones are an error line); a file in which no line
  is a Spark event is ``not a Spark event log``.
* Each log is read under the resource budgets of ``fetchers.budgets``, set by the ``HINDSIGHT_READ_*`` settings
  (docs/SOURCES.md "Resource budgets"): one
  that takes longer than ``HINDSIGHT_INPUT_TIME_BUDGET_S`` to read is an error line (the other inputs go on); one
  over a byte or line budget is analyzed as far as it was read, partial, with a warning naming the budget.
* Exit status: 0 every input analyzed (and stored); 2 some input unreadable; 3 bad configuration
  (heuristics file, redaction patterns: nothing is analyzed); 1 some report could not be stored.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

# The analysis stack (numpy, the heuristics, the readers) is imported where it is used, not here: manage.py runs
# this command before django.setup() and `analyze --help` must not load it (issue 15, docs/DECISIONS.md "Start-up";
# tests/analyzer/test_analyze_startup.py keeps it so).
if TYPE_CHECKING:
    from analysis import jobinfo
    from analysis.impact.whatif import WhatIf
    from analysis.pipeline import AnalysisReport, HeuristicSuite
    from appmodel.mapreduce import MapReduceApp
    from appmodel.spark import SparkApp
    from fetchers.jhist import MapReduceReadOutcome
    from fetchers.spark_eventlog import ReadOutcome

EXIT_STORE_FAILED: Final = 1
EXIT_UNREADABLE_INPUT: Final = 2
EXIT_BAD_CONFIG: Final = 3
# The readers' "nothing under this directory" errors (fetchers.eventlog.layout, fetchers.jhist): not an error when
# the other reader found something there.
_NOTHING_FOUND: Final = re.compile(r": no event logs found(?: \(|$)|: no \.jhist job-history files found$")
_WASTE_BASES: Final = {
    "peak_jvm_memory": "peak JVM memory",
    "task_time": "task time",
    "mixed": "peak JVM memory where logged, else task time",
    "peak_task_memory": "peak task memory",
}


def printable(text: object) -> str:
    """Untrusted text made safe for a terminal: control characters (escape sequences, newlines) escaped."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in value)


def _what_if_line(what: WhatIf, app_type: str) -> str:
    from appmodel.formatting import terminal_duration

    own = what.own_executors
    unit = "task container(s)" if app_type == "MAPREDUCE" else f"executor(s) x {what.cores} cores"
    at = ", ".join(f"{n}: {terminal_duration(round(ms))}" for n, ms in sorted(what.runtime_ms_at.items()) if n != own)
    error = "" if what.replay_error is None else f", replay error {what.replay_error:+.1%}"
    return (
        f"{own} {unit} ran {terminal_duration(round(what.actual_ms))}; at {at}; "
        f"ideal {what.ideal_executors}, critical path {terminal_duration(round(what.critical_path_ms))}{error}"
    )


def render_text(report: AnalysisReport, stored: str) -> str:
    """A readable verdict: identity, severity and score, findings at MODERATE and above with advice."""
    from analysis.pipeline import severity_name
    from appmodel.formatting import terminal_duration, terminal_gb_hours
    from heuristics import Severity

    metrics = report.metrics
    attempt = f" attempt {printable(report.attempt_id)}" if report.attempt_id else ""
    if report.app_type == "MAPREDUCE":
        kind = f"MapReduce ({printable(report.job.job_type)})" if report.job.job_type else "MapReduce"
    else:
        kind = f"Spark {printable(report.spark_version or 'unknown')}"
    lines = [
        f"{printable(report.app_id)}{attempt}: {printable(report.app_name) or '(no name)'}",
        f"  user {printable(report.user) or 'unknown'}, {kind}, "
        f"{report.status}{' (partial log)' if report.partial else ''}, "
        f"runtime {terminal_duration(metrics.runtime_ms if metrics else None)}",
        f"  source {printable(report.source)}",
    ]
    if metrics:
        lines.append(
            f"  memory used {terminal_gb_hours(metrics.used_gb_hours)}, "
            f"wasted {terminal_gb_hours(metrics.wasted_gb_hours)}"
            + (
                f", needed memory from {_WASTE_BASES.get(metrics.waste_basis, metrics.waste_basis)}"
                if metrics.waste_basis
                else ""
            )
        )
    lines.append(f"  verdict: {report.severity_name}, cost score {report.score} GB·s")
    for item in report.headline:
        lines.append(f"    {severity_name(item.severity):<9} {printable(item.summary)} [{printable(item.code)}]")
        lines.extend(
            f"              change {printable(c.property)} = {printable(c.value)}: {printable(c.reason)}"
            for c in item.changes
        )
    led = {item.code for item in report.headline}
    for finding in report.findings_at_least(Severity.MODERATE):
        if finding.code in led:
            continue
        heading = f"{printable(finding.name)} [{printable(finding.code)}], cost score {finding.score} GB·s"
        lines.append(f"    {finding.severity_name:<9} {heading}")
        if finding.advice:
            lines.append(f"              {printable(finding.advice)}")
    if not report.headline:
        lines.append("    nothing worth changing: no finding at MODERATE or above and none that cost 5% of the run")
    if report.what_if is not None:
        lines.append(f"  what-if: {_what_if_line(report.what_if, report.app_type)}")
    lines.extend(f"  warning: {printable(warning)}" for warning in report.warnings)
    lines.append(f"  {stored}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Analyze Spark event logs and MapReduce .jhist job histories (files, or directories scanned for both): "
        "print a verdict per application and store it. Exit 0 when every input was analyzed, 2 when some input "
        "was unreadable (one 'hindsight: <path>: <reason>' line each on stderr, the others still analyzed), 3 on a bad "
        "heuristics configuration, 1 when a report could not be stored."
    )
    # The command must run without a database (--no-store) and without the web UI: no system checks.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths", nargs="+", metavar="PATH", help="event-log or .jhist file, or a directory of either"
        )
        parser.add_argument(
            "--format",
            dest="output_format",
            choices=("text", "json"),
            default="text",
            help="text: a readable verdict per app; json: JSON Lines, one object per app",
        )
        parser.add_argument("--no-store", action="store_true", help="print only; do not touch the database at all")

    def error(self, path: object, reason: object) -> None:
        self.stderr.write(f"hindsight: {printable(path)}: {printable(reason)}", style_func=lambda s: s)

    def handle(self, *args: Any, paths: list[str], output_format: str, no_store: bool, **options: Any) -> None:
        _set_up_django(store=not no_store)
        from appmodel.redaction import Redactor

        self.output_format = output_format
        self.no_store = no_store
        self.store_failures = 0
        self.suite = self._load_suite()
        self.jobinfo_config = jobinfo_config_or_exit(self.error)
        self.patterns = list(settings.HINDSIGHT_REDACTION_PATTERNS)
        try:
            Redactor(self.patterns)
        except ValueError as exc:
            self.error("HINDSIGHT_REDACTION_PATTERNS", exc)
            raise SystemExit(EXIT_BAD_CONFIG) from None

        unreadable = sum(self._analyze_input(raw_path) for raw_path in paths)
        if unreadable:
            raise SystemExit(EXIT_UNREADABLE_INPUT)
        if self.store_failures:
            raise SystemExit(EXIT_STORE_FAILED)

    def _analyze_input(self, raw_path: str) -> int:
        """Analyze, store and print every app under one input; the number of unreadable logs found there.

        A ``.jhist`` file is a MapReduce job; another file a Spark event log; a directory is scanned for both, and
        only when it holds neither is that an error.
        """
        from fetchers.jhist import JHIST_SUFFIX, read_jobs
        from fetchers.spark_eventlog import read_apps

        path = Path(raw_path).expanduser()
        try:
            mode = path.stat().st_mode  # stat, never open: a FIFO or device given as PATH must not block
            path = path.resolve()
        except FileNotFoundError:
            self.error(raw_path, "no such file or directory")
            return 1
        except (OSError, RuntimeError) as exc:  # a name over the file-name limit, a symlink loop, no permission
            self.error(raw_path, f"cannot read ({getattr(exc, 'strerror', None) or exc})")
            return 1
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            self.error(raw_path, "not a regular file")
            return 1
        readers: list[tuple[str, Callable[[], Iterable[ReadOutcome | MapReduceReadOutcome]]]]
        if path.is_file() and path.name.endswith(JHIST_SUFFIX):
            readers = [("MapReduce job histories", lambda: read_jobs(path, self.patterns))]
        elif path.is_file():
            readers = [("Spark event logs", lambda: read_apps(path, self.patterns))]
        else:
            readers = [
                ("Spark event logs", lambda: read_apps(path, self.patterns)),
                ("MapReduce job histories", lambda: read_jobs(path, self.patterns)),
            ]
        found = unreadable = 0
        nothing_found: list[str] = []  # each reader's own "nothing here" line, kept until all readers are done
        self.said: set[tuple[str, str]] = set()  # (path, reason) lines printed for this input
        for kind, outcomes in readers:
            reader_found, reader_unreadable = self._analyze_outcomes(raw_path, kind, outcomes, path, nothing_found)
            found += reader_found
            unreadable += reader_unreadable
        if not found:
            detail = next((line for line in nothing_found if "(" in line), "")
            detail = detail[detail.index("(") :] if detail else ""
            self.error(raw_path, f"no {' or '.join(kind for kind, _ in readers)} found{' ' + detail if detail else ''}")
            return unreadable + 1
        return unreadable

    def _analyze_outcomes(
        self,
        raw_path: str,
        kind: str,
        outcomes: Callable[[], Iterable[ReadOutcome | MapReduceReadOutcome]],
        path: Path,
        nothing_found: list[str],
    ) -> tuple[int, int]:
        """(apps and unreadable logs found, unreadable ones) of one reader's outcomes, each app analyzed, stored
        and printed. The reader's "nothing found under path" outcome is not printed but added to ``nothing_found``."""
        from analysis.pipeline import analyze

        found = unreadable = 0
        try:
            for outcome in outcomes():
                if outcome.app is None:
                    error = outcome.error or "unreadable"
                    if outcome.source == str(path) and _NOTHING_FOUND.search(error):
                        nothing_found.append(error)
                        continue
                    found += 1
                    where_and_why = _where_and_why(outcome.source, error)
                    if where_and_why not in self.said:  # both readers scan a directory: say each problem once
                        self.said.add(where_and_why)
                        self.error(*where_and_why)
                    unreadable += 1
                    continue
                found += 1
                app: SparkApp | MapReduceApp = outcome.app
                app.source = app.source or outcome.source
                report = analyze(app, self.suite, self.jobinfo_config)
                stored_id = None if self.no_store else self._store(report)
                self._print(report, stored_id)
        except Exception as exc:  # a reader bug on one input must not cost the other inputs
            self.error(raw_path, f"cannot read {kind}: {type(exc).__name__}: {exc}")
            return found + 1, unreadable + 1
        return found, unreadable

    def _load_suite(self) -> HeuristicSuite:
        import heuristics

        origin = settings.HINDSIGHT_HEURISTICS_FILE or "heuristics configuration"
        try:
            return heuristics.load_suite(
                user_file=settings.HINDSIGHT_HEURISTICS_FILE, profile=settings.HINDSIGHT_SEVERITY_PROFILE
            )
        except heuristics.ConfigError as exc:
            self.error(origin, str(exc).removeprefix(f"{origin}: "))
            raise SystemExit(EXIT_BAD_CONFIG) from None

    def _store(self, report: AnalysisReport) -> int | None:
        """The stored app's id, or None (after an error line) when the database refused it."""
        from django.db import DatabaseError

        from analyzer.services import report_store  # imported only when storing: --no-store needs no ORM

        try:
            return report_store(report=report, source=report.source).pk
        except DatabaseError as exc:
            first_line = next(iter(str(exc).strip().splitlines()), type(exc).__name__)
            self.error(report.source, f"could not store {report.app_id}: {first_line}")
            self.store_failures += 1
            return None

    def _print(self, report: AnalysisReport, stored_id: int | None) -> None:
        if self.output_format == "json":
            record = report.to_json_dict()
            record["stored_id"] = stored_id
            self.stdout.write(json_line(record))
            self.stdout.flush()  # one complete line per app, as soon as it is known
            return
        if self.no_store:
            where = "not stored (--no-store)"
        elif stored_id is None:
            where = "not stored: the database refused it (see the error above)"
        else:
            from django.db import connection

            database = connection.settings_dict.get("NAME")
            where = f"stored as analyzed app #{stored_id} in the {connection.vendor} database {database}"
        self.stdout.write(render_text(report, where) + "\n")
        self.stdout.flush()


def json_line(record: dict[str, Any]) -> str:
    """One JSON Lines record. orjson writes integers of 64 bits at most; a sum of hostile counters can pass that
    (json_safe keeps it exact for jsonb), and the stdlib writes any integer."""
    import orjson

    try:
        return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        from appmodel.jsonsafe import json_safe

        return json.dumps(json_safe(record), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _where_and_why(source: str, error: str) -> tuple[str, str]:
    """(path, reason) of a reader's error line: the entry under a scanned directory when the line names one
    (``<dir>/<entry>: not a regular file``), else the source read."""
    if error.startswith(f"{source}: "):
        return source, error.removeprefix(f"{source}: ")
    if error.startswith(f"{source.rstrip('/')}/") and ": " in error:
        entry, _, reason = error.partition(": ")
        return entry, reason
    return source, error


def jobinfo_config_or_exit(error: Callable[[object, object], None]) -> jobinfo.JobInfoConfig:
    """The job-info configuration (HINDSIGHT_JOBINFO_FILE); a bad one is reported and exits 3 (EXIT_BAD_CONFIG)."""
    from analysis import jobinfo

    try:
        return jobinfo.configured(settings.HINDSIGHT_JOBINFO_FILE)
    except jobinfo.JobInfoConfigError as exc:
        error(settings.HINDSIGHT_JOBINFO_FILE or "job-info configuration", exc)
        raise SystemExit(EXIT_BAD_CONFIG) from None


def _set_up_django(*, store: bool) -> None:
    """What ``django.setup()`` would have done, when manage.py ran this command before it (its fast path): all of
    it (the app registry, the ORM) to store; for ``--no-store``, which touches no model, only the logging it would
    have configured. A no-op under ``call_command`` and ``django-admin analyze``, which set Django up first."""
    from django.apps import apps

    if apps.ready:
        return
    if store:
        import django

        django.setup()
        return
    import logging

    logging.captureWarnings(True)  # as django.setup() does: Python warnings go through logging
    if settings.LOGGING_CONFIG and settings.LOGGING:  # the production settings' handler on the root logger
        from django.utils.log import configure_logging

        configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)
    # Otherwise Django's default logging would configure only the django.* loggers (and load its error-mail
    # handler, a quarter of a second of imports), which nothing here logs to.
