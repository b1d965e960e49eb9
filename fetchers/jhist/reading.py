"""Reading job histories: every job under a path, one job from its files, a stream or lines, in bounded chunks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from appmodel.mapreduce import MapReduceApp
from appmodel.redaction import Redactor
from fetchers.budgets import SETTINGS, Deadline, OverTime, ReadBudgets, default_budgets, over_budget_warning
from fetchers.eventlog.layout import open_regular
from fetchers.hadoop_conf import ConfError, read_conf_xml
from fetchers.jhist.builder import JhistBuilder, JhistError
from fetchers.jhist.files import CONF_SUFFIX, JobHistoryFiles, find_history_files

CHUNK_SIZE: Final = 1 << 20
# Blank lines between two newlines, collapsed to one newline in C before a chunk is split: a history of millions
# of empty lines costs as little as its bytes (issue 15 F4). Linear: each try starts at a newline.
_BLANK_LINES: Final = re.compile(rb"\n[ \t\r\n]*\n")


@dataclass(frozen=True)
class MapReduceReadOutcome:
    source: str  # the file or directory read
    app: MapReduceApp | None
    error: str | None  # one clear line when the history could not be read at all
    over_budget: bool = False  # the error is a budget (fetchers.budgets): reading it again would only fail again


class OverBudget(JhistError):
    """Reading the history took longer than its budget (``fetchers.budgets``); the message names the variable."""


def read_jobs(
    path: Path, redaction_patterns: Sequence[str] = (), budgets: ReadBudgets | None = None
) -> Iterator[MapReduceReadOutcome]:
    """One outcome per job-history file under ``path``; raises ValueError only for an invalid redaction pattern (or
    an invalid budget variable when ``budgets`` is not given)."""
    Redactor(redaction_patterns)  # an invalid pattern fails here, before any job is read
    budgets = budgets or default_budgets()
    files, errors = find_history_files(path)
    for error in errors:
        yield MapReduceReadOutcome(source=str(path), app=None, error=error)
    for job_files in files:
        source = str(job_files.jhist)
        try:
            app = read_job(job_files, redaction_patterns, budgets)
        except JhistError as exc:
            over = isinstance(exc, OverBudget)
            yield MapReduceReadOutcome(source=source, app=None, error=str(exc), over_budget=over)
            continue
        yield MapReduceReadOutcome(source=source, app=app, error=None)


def read_job(
    files: JobHistoryFiles, redaction_patterns: Sequence[str] = (), budgets: ReadBudgets | None = None
) -> MapReduceApp:
    """One job from its files. JhistError when the history cannot be opened or is not a job history; a conf that
    is missing or unreadable only adds a warning."""
    path = files.jhist
    try:
        fh = open_regular(path)  # never blocks: a FIFO put in the file's place is refused
    except OSError as exc:
        raise JhistError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    with fh:
        app = read_job_stream(fh, source=str(path), budgets=budgets)
    index = files.index
    if index is not None:  # a history cut before JOB_SUBMITTED still has its file name
        app.job_id = app.job_id or index.job_id
        app.user = app.user or index.user
        app.name = app.name or index.job_name
        app.queue = app.queue or index.queue
        app.submit_ms = app.submit_ms if app.submit_ms is not None else index.submit_ms
    app.job_id = app.job_id or files.job_id or ""
    conf_path = files.conf
    if conf_path is None and app.job_id:
        candidate = path.with_name(f"{app.job_id}{CONF_SUFFIX}")
        conf_path = candidate if candidate.is_file() else None
    if conf_path is None:
        app.warnings.append(f"{path.name}: no {CONF_SUFFIX} next to it; the job's configuration is unknown")
    else:
        try:
            conf = read_conf_xml(conf_path, redaction_patterns)
        except ConfError as exc:
            app.warnings.append(f"configuration not read: {exc}")
        else:
            app.conf = conf.properties
            app.warnings.extend(conf.warnings)
    return app


def read_job_stream(
    stream: IO[bytes], *, source: str, conf: dict[str, str] | None = None, budgets: ReadBudgets | None = None
) -> MapReduceApp:
    """One job from a binary stream of its history (a file, or a WebHDFS response body), read in bounded chunks
    under ``budgets`` (default: from the environment). ``conf`` as for :func:`build_job`. JhistError when it is not
    a job history, OverBudget (a JhistError) past the time budget; an OSError while reading, or a byte or line
    budget, ends the job early (partial, with a warning)."""
    budgets = budgets or default_budgets()
    builder = JhistBuilder(source=source, budgets=budgets)
    try:
        builder.feed(_lines(stream, builder, budgets))
    except OverTime as exc:
        raise OverBudget(f"{source}: {exc}") from None
    except OSError as exc:
        builder.report(f"read failed ({exc.strerror or exc}); the rest of the history is missing", partial=True)
    app = builder.finish()
    if app.stats.events == 0:
        raise JhistError(f"{source}: no job-history events (empty or not a .jhist file)")
    if conf is not None:
        app.conf = conf
    return app


def build_job(lines: Iterable[bytes], *, source: str, conf: dict[str, str] | None = None) -> MapReduceApp:
    """One job from the lines of its history (bytes, with or without newlines), e.g. streamed over WebHDFS.
    ``conf`` is an already resolved and redacted configuration (``fetchers.hadoop_conf``). JhistError when the
    lines are not a job history."""
    builder = JhistBuilder(source=source)
    builder.feed(lines)
    app = builder.finish()
    if conf is not None:
        app.conf = conf
    return app


def _lines(fh: IO[bytes], builder: JhistBuilder, budgets: ReadBudgets) -> Iterator[bytes]:
    """Lines of a binary file, in bounded chunks; a torn last line is still yielded (the parser judges it).

    Under ``budgets``: a line over ``max_line_bytes`` is skipped (counted malformed) without being held; past
    ``max_bytes`` or ``max_lines`` the read stops (partial); the wall clock is checked once per chunk (OverTime).
    """
    stats = builder.stats
    deadline = Deadline(budgets.time_s)
    max_line = budgets.max_line_bytes
    pending: list[bytes] = []  # pieces of a line spanning chunks
    pending_size = 0
    oversized = False  # dropping the rest of a line too long to be an event
    long_lines = 0
    while chunk := fh.read(CHUNK_SIZE):
        deadline.check()
        stats.bytes_read += len(chunk)
        if stats.bytes_read > budgets.max_bytes or stats.lines > budgets.max_lines:
            over = (
                f"more than {budgets.max_bytes:,} bytes"
                if stats.bytes_read > budgets.max_bytes
                else f"more than {budgets.max_lines:,} lines"
            )
            builder.report(over_budget_warning(over, "max_bytes" if "bytes" in over else "max_lines"), partial=True)
            return
        if b"\n\n" in chunk or b"\n " in chunk or b"\n\r" in chunk or b"\n\t" in chunk:
            chunk = _BLANK_LINES.sub(b"\n", chunk)
        last = chunk.rfind(b"\n")
        if last < 0:
            if not oversized:
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size > max_line:
                    long_lines += 1
                    if long_lines == 1:
                        builder.report(
                            f"a line longer than {max_line:,} bytes was skipped (raise {SETTINGS['max_line_bytes']} "
                            "to read such lines)",
                            partial=True,
                        )
                    stats.malformed_lines += 1
                    oversized, pending, pending_size = True, [], 0
            continue
        pieces = chunk[:last].split(b"\n")
        if oversized:
            del pieces[0]
            oversized = False
        elif pending:
            pieces[0] = b"".join((*pending, pieces[0]))
            pending = []
        yield from pieces
        rest = chunk[last + 1 :]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
    if pending and not oversized:
        builder.unterminated = True  # set before the line is parsed: a torn last line makes the model partial
        yield b"".join(pending)
