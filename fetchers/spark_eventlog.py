"""Read Spark event logs into ``SparkApp`` models (one per application attempt).

``read_apps(path)`` finds every event log under a file or directory (any codec, single, rolling or Databricks
layout, via ``fetchers.eventlog``) and yields one ``ReadOutcome`` per log: the app, or one clear error line when
the log could not be read at all. A log that is only partly readable still gives an app, marked ``partial``
with the reasons in ``app.warnings``. Each log is read under ``fetchers.budgets`` (bytes, lines, line length,
wall clock, field lengths): over the time budget it is an error outcome (``over_budget``), over another the app
is partial. ``build_app`` turns already-decoded lines into an app; the event semantics
live in ``fetchers.spark_events.builder`` (its docstring says how the app status is derived).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from appmodel.redaction import Redactor
from appmodel.spark import SparkApp
from fetchers.budgets import Deadline, OverTime, ReadBudgets, default_budgets, over_budget_warning
from fetchers.eventlog import EventLogError, LineStream, find_event_logs, open_lines
from fetchers.eventlog.codecs import CHUNK_SIZE
from fetchers.spark_events.builder import AppBuilder
from fetchers.spark_events.parallel import ChunkCheck, feed_parallel, feed_serial, parallel_worthwhile

__all__ = ("ReadOutcome", "build_app", "read_apps")


@dataclass(frozen=True)
class ReadOutcome:
    source: str  # the file or directory read
    app: SparkApp | None
    error: str | None  # one clear line when the log could not be read at all
    over_budget: bool = False  # the error is a budget (fetchers.budgets): reading it again would only fail again


def build_app(
    lines: Iterable[bytes],
    *,
    source: str,
    redactor: Redactor,
    partial: bool = False,
    warnings: Iterable[str] = (),
    app_id_hint: str | None = None,
    attempt_hint: str | None = None,
    budgets: ReadBudgets | None = None,
) -> SparkApp:
    """One app attempt from the lines of its event log (bytes, with or without the trailing newline)."""
    builder = AppBuilder(
        source=source, redactor=redactor, app_id_hint=app_id_hint, attempt_hint=attempt_hint, budgets=budgets
    )
    builder.feed(lines)
    return builder.finish(partial=partial, warnings=warnings)


def read_apps(
    path: Path, redaction_patterns: Sequence[str] = (), budgets: ReadBudgets | None = None
) -> Iterator[ReadOutcome]:
    """One outcome per event log under ``path``; raises ValueError only for an invalid redaction pattern (or an
    invalid budget variable when ``budgets`` is not given)."""
    redactor = Redactor(redaction_patterns)
    budgets = budgets or default_budgets()
    try:
        logs, errors = find_event_logs(path)
    except EventLogError as exc:
        yield ReadOutcome(source=str(path), app=None, error=str(exc))
        return
    for error in errors:
        yield ReadOutcome(source=str(path), app=None, error=error)
    for log in logs:
        source = str(log.path)
        try:
            builder = AppBuilder(
                source=source,
                redactor=redactor,
                app_id_hint=log.app_id_hint,
                attempt_hint=log.attempt_hint,
                budgets=budgets,
            )
            check = _chunk_check(builder, budgets)
            if parallel_worthwhile(log):
                stream = feed_parallel(builder, log, CHUNK_SIZE, budgets, check)
            else:
                with open_lines(log, chunk_size=CHUNK_SIZE, budgets=budgets) as stream:
                    feed_serial(builder, stream.raw_chunks(), stream, check)
            builder.stats.malformed_lines += stream.long_lines
            app = builder.finish()
            warnings = list(stream.warnings)
            app.stats.bytes_read = stream.bytes_read  # decompressed bytes, newlines included
            partial = bool(stream.partial) or bool(log.in_progress)
        except OverTime as exc:
            yield ReadOutcome(source=source, app=None, error=f"{source}: {exc}", over_budget=True)
            continue
        except (EventLogError, OSError) as exc:
            yield ReadOutcome(source=source, app=None, error=f"cannot read {source}: {exc}")
            continue
        if app.stats.lines == 0:
            yield ReadOutcome(source=source, app=None, error=f"{source}: no events (empty or unreadable log)")
            continue
        if app.stats.events == 0:  # JSON or text that is not an event log: nothing to analyze, not an empty verdict
            error = f"{source}: not a Spark event log: none of its {app.stats.lines} line(s) is a Spark event"
            yield ReadOutcome(source=source, app=None, error=error)
            continue
        app.warnings.extend(warnings)
        if log.in_progress:
            app.warnings.append("the log is still being written (.inprogress)")
        app.partial = app.partial or partial
        yield ReadOutcome(source=source, app=app, error=None)


def _chunk_check(builder: AppBuilder, budgets: ReadBudgets) -> ChunkCheck:
    """After each chunk: the wall clock (OverTime) and the line budget (the stream stops, the app is partial)."""
    deadline = Deadline(budgets.time_s)
    stats = builder.stats

    def check(stream: LineStream) -> None:
        deadline.check()
        if stats.lines > budgets.max_lines and not stream.stopped:
            stream.stop(over_budget_warning(f"more than {budgets.max_lines:,} lines", "max_lines"))

    return check
