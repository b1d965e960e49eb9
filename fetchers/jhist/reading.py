"""Reading job histories: every job under a path, one job from its files, a stream or lines, in bounded chunks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from appmodel.mapreduce import MapReduceApp
from appmodel.redaction import Redactor
from fetchers.hadoop_conf import ConfError, read_conf_xml
from fetchers.jhist.builder import JhistBuilder, JhistError
from fetchers.jhist.files import CONF_SUFFIX, JobHistoryFiles, find_history_files

CHUNK_SIZE: Final = 1 << 20
MAX_LINE_BYTES: Final = 64 << 20  # a real event line is a few KB (a long stack trace at most)


@dataclass(frozen=True)
class MapReduceReadOutcome:
    source: str  # the file or directory read
    app: MapReduceApp | None
    error: str | None  # one clear line when the history could not be read at all


def read_jobs(path: Path, redaction_patterns: Sequence[str] = ()) -> Iterator[MapReduceReadOutcome]:
    """One outcome per job-history file under ``path``; raises ValueError only for an invalid redaction pattern."""
    Redactor(redaction_patterns)  # an invalid pattern fails here, before any job is read
    files, errors = find_history_files(path)
    for error in errors:
        yield MapReduceReadOutcome(source=str(path), app=None, error=error)
    for job_files in files:
        source = str(job_files.jhist)
        try:
            app = read_job(job_files, redaction_patterns)
        except JhistError as exc:
            yield MapReduceReadOutcome(source=source, app=None, error=str(exc))
            continue
        yield MapReduceReadOutcome(source=source, app=app, error=None)


def read_job(files: JobHistoryFiles, redaction_patterns: Sequence[str] = ()) -> MapReduceApp:
    """One job from its files. JhistError when the history cannot be opened or is not a job history; a conf that
    is missing or unreadable only adds a warning."""
    path = files.jhist
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise JhistError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    with fh:
        app = read_job_stream(fh, source=str(path))
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


def read_job_stream(stream: IO[bytes], *, source: str, conf: dict[str, str] | None = None) -> MapReduceApp:
    """One job from a binary stream of its history (a file, or a WebHDFS response body), read in bounded chunks.
    ``conf`` as for :func:`build_job`. JhistError when it is not a job history; an OSError while reading ends
    the job early (partial, with a warning)."""
    builder = JhistBuilder(source=source)
    try:
        builder.feed(_lines(stream, builder))
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


def _lines(fh: IO[bytes], builder: JhistBuilder) -> Iterator[bytes]:
    """Lines of a binary file, in bounded chunks; a torn last line is still yielded (the parser judges it)."""
    pending: list[bytes] = []  # pieces of a line spanning chunks
    pending_size = 0
    oversized = False  # dropping the rest of a line too long to be an event
    while chunk := fh.read(CHUNK_SIZE):
        builder.stats.bytes_read += len(chunk)
        last = chunk.rfind(b"\n")
        if last < 0:
            if not oversized:
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size > MAX_LINE_BYTES:
                    builder.report(f"a line longer than {MAX_LINE_BYTES >> 20} MiB was skipped", partial=True)
                    builder.stats.malformed_lines += 1
                    oversized, pending, pending_size = True, [], 0
            continue
        pieces = chunk[:last].split(b"\n")
        if oversized:
            del pieces[0]
            oversized = False
        elif pending:
            pieces[0] = b"".join((*pending, pieces[0]))
        yield from pieces
        rest = chunk[last + 1 :]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
    if pending and not oversized:
        builder.unterminated = True  # set before the line is parsed: a torn last line makes the model partial
        yield b"".join(pending)
