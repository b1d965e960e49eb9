"""Read Spark event logs into ``SparkApp`` models (one per application attempt).

``read_apps(path)`` finds every event log under a file or directory (any codec, single, rolling or Databricks
layout, via ``fetchers.eventlog``) and yields one ``ReadOutcome`` per log: the app, or one clear error line when
the log could not be read at all. A log that is only partly readable still gives an app, marked ``partial``
with the reasons in ``app.warnings``. ``build_app`` turns already-decoded lines into an app; the event semantics
live in ``fetchers.spark_events.builder`` (its docstring says how the app status is derived).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from appmodel.redaction import Redactor
from appmodel.spark import SparkApp
from fetchers.eventlog import EventLogError, find_event_logs, open_lines
from fetchers.eventlog.codecs import CHUNK_SIZE
from fetchers.spark_events.builder import AppBuilder
from fetchers.spark_events.parallel import feed_parallel, feed_serial, parallel_worthwhile

__all__ = ("ReadOutcome", "build_app", "read_apps")


@dataclass(frozen=True)
class ReadOutcome:
    source: str  # the file or directory read
    app: SparkApp | None
    error: str | None  # one clear line when the log could not be read at all


def build_app(
    lines: Iterable[bytes],
    *,
    source: str,
    redactor: Redactor,
    partial: bool = False,
    warnings: Iterable[str] = (),
    app_id_hint: str | None = None,
    attempt_hint: str | None = None,
) -> SparkApp:
    """One app attempt from the lines of its event log (bytes, with or without the trailing newline)."""
    builder = AppBuilder(source=source, redactor=redactor, app_id_hint=app_id_hint, attempt_hint=attempt_hint)
    builder.feed(lines)
    return builder.finish(partial=partial, warnings=warnings)


def read_apps(path: Path, redaction_patterns: Sequence[str] = ()) -> Iterator[ReadOutcome]:
    """One outcome per event log under ``path``; raises ValueError only for an invalid redaction pattern."""
    redactor = Redactor(redaction_patterns)
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
                source=source, redactor=redactor, app_id_hint=log.app_id_hint, attempt_hint=log.attempt_hint
            )
            if parallel_worthwhile(log):
                stream = feed_parallel(builder, log, CHUNK_SIZE)
            else:
                with open_lines(log, chunk_size=CHUNK_SIZE) as stream:
                    feed_serial(builder, stream.raw_chunks())
            app = builder.finish()
            warnings = list(stream.warnings)
            app.stats.bytes_read = stream.bytes_read  # decompressed bytes, newlines included
            partial = bool(stream.partial) or bool(log.in_progress)
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
