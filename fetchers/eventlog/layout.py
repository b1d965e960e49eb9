"""Finding Spark event logs on disk: single files, rolling directories, Databricks directories.

Format facts relied on (refdata README section 6 facts 3-5):

* single file ``<appId>[_<attemptId>][.<codec>][.inprogress]``;
* rolling (Spark 3.0+, the 4.x default) directory ``eventlog_v2_<appId>[_<attemptId>]/`` holding
  ``events_<N>_<appId>[_<attemptId>][.<codec>]`` parts (N from 1, numeric order), an empty
  ``appstatus_<appId>[_<attemptId>][.inprogress]`` marker (absent or ``.inprogress`` = still running), Hadoop's
  ``.<name>.crc`` files, and after compaction ``events_<N>_...[.<codec>].compact`` which replaces parts <= N;
* Databricks: ``eventlog-YYYY-MM-DD--HH-MM[.gz]`` rolled parts (oldest first) then the current ``eventlog``;
* Spark sanitizes app ids in names (no ``.``), so a ``.`` starts a suffix; YARN attempt ids are numbers.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from fetchers.eventlog.codecs import HEAD_SIZE, SUFFIX_CODECS, UnknownFormat, codec_from_name, detect_codec


class EventLogError(Exception):
    """The input cannot be read as an event log; the message is one line naming the path."""


@dataclass(frozen=True)
class EventLogPart:
    path: Path
    codec: str | None  # None (plain), "zstd", "lz4", "snappy", "lzf", "gzip"
    index: int  # rolling part number (events_<N>_...), position for Databricks parts, 0 for single files


@dataclass(frozen=True)
class EventLog:
    path: Path  # the file or the rolling / Databricks directory
    parts: tuple[EventLogPart, ...]  # in reading order
    layout: str  # "single" | "rolling" | "databricks"
    in_progress: bool
    app_id_hint: str | None  # from the name; the log's own ApplicationStart is authoritative
    attempt_hint: str | None


SINGLE: Final = "single"
ROLLING: Final = "rolling"
DATABRICKS: Final = "databricks"

ROLLING_DIR_PREFIX: Final = "eventlog_v2_"
APPSTATUS_PREFIX: Final = "appstatus_"
IN_PROGRESS: Final = ".inprogress"
COMPACT: Final = ".compact"
DATABRICKS_CURRENT: Final = "eventlog"
# Plain directories a scan descends below the given one (local and HDFS alike): deeper ones are reported, not
# scanned. Real trees are shallow (a JobHistory done tree is yyyy/MM/dd/serial); a hostile one is bounded.
MAX_SCAN_DEPTH: Final = 16
NOT_REGULAR: Final = "not a regular file"  # a FIFO, socket or device: skipped, never opened
# An on-demand request without an attempt looks up the logs of attempts 1..this (YARN's default allows 2); a later
# attempt is analyzed when polling lists it.
MAX_ATTEMPTS_LOOKED_UP: Final = 8
_SPARK_NAME_SEPARATORS: Final = re.compile(r"[ :/]")
_SPARK_NAME_DOTS: Final = re.compile(r"[.${}'\"]")

_ROLLING_PART = re.compile(r"events_(?P<index>\d+)_(?P<rest>.+)")
_DATABRICKS_ROLLED = re.compile(r"eventlog-\d{4}-\d{2}-\d{2}--\d{2}-\d{2}(?:\.[A-Za-z0-9]+)?")
# YARN ids contain underscores; other ids (local-<ms>, app-<time>-<n>, spark-<hex>) do not, and all carry a long
# number. An attempt id is a number. Names of any other shape (renamed copies) give no hint.
_APP_AND_ATTEMPT = re.compile(r"(?P<app>application_\d+_\d+|[^_]*\d{4}[^_]*)(?:_(?P<attempt>\d+))?")

# Files that share folders with event logs but are certainly not event logs: skipped without a complaint.
_NOT_LOG_SUFFIXES: Final = frozenset(
    {"crc", "json", "md", "txt", "csv", "tsv", "xml", "properties", "jhist", "py", "sh", "html", "yaml", "yml"}
    | {"conf", "jar", "zip", "tar", "tgz", "pdf", "png", "jpg", "svg", "summary"}  # .summary: JobHistory's
)


def find_event_logs(path: Path) -> tuple[list[EventLog], list[str]]:
    """Event logs at ``path`` and one error line per entry under it that could not be used.

    A file -> that log. A rolling (``eventlog_v2_*``) or Databricks directory -> that log. Any other
    directory -> every log found under it, down to MAX_SCAN_DEPTH directories; a FIFO, socket or device is an
    error line ("not a regular file"), never opened. Raises EventLogError when nothing usable is there.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise EventLogError(f"{path}: no such file or directory") from None
    except OSError as error:
        raise EventLogError(f"{path}: cannot read ({error.strerror or error})") from None
    if stat.S_ISREG(mode):
        return [single_file_log(path)], []
    if not stat.S_ISDIR(mode):
        raise EventLogError(f"{path}: {NOT_REGULAR}")
    errors: list[str] = []
    logs: list[EventLog] = []
    directory_log = _directory_log(path)
    if directory_log is not None:
        return [directory_log], errors
    _scan(path, logs, errors)
    if not logs:
        detail = f" ({len(errors)} unusable entries; first: {errors[0]})" if errors else ""
        raise EventLogError(f"{path}: no event logs found{detail}")
    return logs, errors


def single_file_log(path: Path) -> EventLog:
    """The log in one file; EventLogError if it cannot be read or is not in a known format."""
    name = path.name
    in_progress = name.endswith(IN_PROGRESS)
    head = _read_head(path)
    if not head and not in_progress:
        raise EventLogError(f"{path}: empty file, no events")
    try:
        codec, _ = detect_codec(name, head)
    except UnknownFormat as error:
        raise EventLogError(f"{path}: not an event log: {error}") from None
    app, attempt = name_hints(name, SINGLE)
    return EventLog(path, (EventLogPart(path, codec, 0),), SINGLE, in_progress, app, attempt)


def rolling_listing(directory: Path) -> tuple[list[EventLogPart], bool, list[str]]:
    """(parts in reading order, in progress, problems) of a rolling ``eventlog_v2_*`` directory.

    Problems are one line each: unusable names, missing part numbers. Raises EventLogError if the directory
    cannot be listed or holds no event file.
    """
    selection = rolling_selection(entry.name for entry in _list_dir(directory))
    if not selection.parts:
        raise EventLogError(f"{directory}: rolling event log directory without events_<N>_* files")
    problems = list(selection.problems)
    parts: list[EventLogPart] = []
    for index, name in selection.parts:
        path = directory / name
        try:
            codec, _ = detect_codec(path.name, _read_head(path))
        except (UnknownFormat, EventLogError) as error:
            problems.append(f"{path.name}: unusable part: {str(error).removeprefix(f'{path}: ')}")
            continue
        parts.append(EventLogPart(path, codec, index))
    if not parts:
        raise EventLogError(f"{directory}: no readable event file ({problems[0]})")
    return parts, selection.in_progress, problems


@dataclass(frozen=True)
class RollingSelection:
    """What a rolling directory's file names say, before any file is read (also used for remote listings)."""

    parts: tuple[tuple[int, str], ...]  # (part number, file name) in reading order; a .compact one first
    markers: tuple[str, ...]  # appstatus_* names
    in_progress: bool  # no finished appstatus marker
    problems: tuple[str, ...]


def rolling_selection(names: Iterable[str]) -> RollingSelection:
    """The parts to read of a rolling directory holding files ``names``: a compaction replaces parts <= its N."""
    problems: list[str] = []
    candidates: dict[int, list[tuple[str, bool]]] = {}
    status_markers: list[str] = []
    for name in sorted(names):
        if name.startswith(".") or name.endswith(".crc"):
            continue
        if name.startswith(APPSTATUS_PREFIX):
            status_markers.append(name)
            continue
        match = _ROLLING_PART.fullmatch(name)
        if match is None:
            if name.startswith("events_"):
                problems.append(f"{name}: not a rolling event file name (events_<N>_<appId>); ignored")
            continue
        candidates.setdefault(int(match["index"]), []).append((name, name.endswith(COMPACT)))
    compacted = [index for index, files in candidates.items() if any(compact for _, compact in files)]
    start = max(compacted) if compacted else 0
    chosen: list[tuple[int, str]] = []
    if compacted:
        chosen.append((start, next(name for name, compact in candidates[start] if compact)))
    for index in sorted(i for i in candidates if i > start):
        files = [name for name, compact in candidates[index] if not compact]
        if len(files) > 1:
            problems.append(f"{files[0]}: {len(files)} files for part {index}; reading this one")
        if files:
            chosen.append((index, files[0]))
    expected = start + 1
    for index, name in chosen[1:] if compacted else chosen:
        if index != expected:
            missing = f"{expected}" if index == expected + 1 else f"{expected}-{index - 1}"
            problems.append(f"{name}: part(s) {missing} missing before it; events there are lost")
        expected = index + 1
    complete = any(not marker.endswith(IN_PROGRESS) for marker in status_markers)
    return RollingSelection(tuple(chosen), tuple(status_markers), not complete, tuple(problems))


def databricks_selection(names: Iterable[str]) -> list[str]:
    """The parts of a Databricks directory holding files ``names``, in reading order."""
    names = list(names)
    rolled = sorted(name for name in names if _DATABRICKS_ROLLED.fullmatch(name))  # zero-padded: text = time order
    return [*rolled, DATABRICKS_CURRENT] if DATABRICKS_CURRENT in names else rolled


def directory_layout(name: str, file_names: Iterable[str]) -> str | None:
    """ROLLING or DATABRICKS for a directory named ``name`` holding files ``file_names``; None for any other."""
    if name.startswith(ROLLING_DIR_PREFIX):
        return ROLLING
    # Files only: Databricks cluster-log trees also have a *directory* named eventlog above the logs.
    if any(n == DATABRICKS_CURRENT or _DATABRICKS_ROLLED.fullmatch(n) for n in file_names):
        return DATABRICKS
    return None


def skipped_when_scanning(name: str, *, is_file: bool) -> bool:
    """Entries a directory scan passes over silently: hidden, status markers, files certainly not event logs."""
    if name.startswith((".", APPSTATUS_PREFIX)):
        return True
    return is_file and "." in name and name.rpartition(".")[2].lower() in _NOT_LOG_SUFFIXES


def name_hints(name: str, layout: str) -> tuple[str | None, str | None]:
    """(app id, attempt id) hinted by a log's file or directory name; the log's own events are authoritative."""
    if layout == ROLLING:
        return _app_and_attempt(name.removeprefix(ROLLING_DIR_PREFIX))
    if layout == SINGLE:
        return _app_and_attempt(_strip_suffixes(name))
    return None, None


def databricks_listing(directory: Path) -> tuple[list[EventLogPart], list[str]]:
    """(parts, problems) of a Databricks directory: rolled ``eventlog-<time>[.gz]`` oldest first, then ``eventlog``."""
    ordered = databricks_selection(entry.name for entry in _list_dir(directory) if entry.is_file())
    parts: list[EventLogPart] = []
    problems: list[str] = []
    for position, name in enumerate(ordered, start=1):
        path = directory / name
        try:
            codec, _ = detect_codec(name, _read_head(path))
        except (UnknownFormat, EventLogError) as error:
            problems.append(f"{path.name}: unusable part: {str(error).removeprefix(f'{path}: ')}")
            continue
        parts.append(EventLogPart(path, codec, position))
    if not parts:
        detail = f" ({problems[0]})" if problems else ""
        raise EventLogError(f"{directory}: Databricks event log directory without a readable eventlog file{detail}")
    return parts, problems


def _directory_log(directory: Path) -> EventLog | None:
    """The one log a rolling or Databricks directory holds, None for any other directory.

    Problems inside the log (bad or missing parts) are not errors here: the log is usable, and open_lines
    reports them as warnings on the result, which they make partial.
    """
    name = directory.name
    if name.startswith(ROLLING_DIR_PREFIX):
        parts, in_progress, _ = rolling_listing(directory)
        app, attempt = name_hints(name, ROLLING)
        return EventLog(directory, tuple(parts), ROLLING, in_progress, app, attempt)
    if directory_layout(name, (entry.name for entry in _list_dir(directory) if entry.is_file())) == DATABRICKS:
        parts, _ = databricks_listing(directory)
        return EventLog(directory, tuple(parts), DATABRICKS, False, None, None)
    return None


def _scan(top: Path, logs: list[EventLog], errors: list[str]) -> None:
    """Every log under ``top``, depth first in name order, with an explicit stack: a deep tree cannot exhaust
    Python's stack. Directories nested more than MAX_SCAN_DEPTH below ``top`` are reported, not scanned."""
    pending: list[tuple[Path, int]] = [(top, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            entries = _list_dir(directory)
        except EventLogError as error:
            errors.append(str(error))
            continue
        subdirectories: list[tuple[Path, int]] = []
        for entry in entries:
            if skipped_when_scanning(entry.name, is_file=False):
                continue
            try:
                mode = entry.lstat().st_mode
                if stat.S_ISLNK(mode):
                    mode = entry.stat().st_mode  # follow links to files; linked directories could loop
                    if stat.S_ISDIR(mode):
                        continue
                if stat.S_ISDIR(mode):
                    directory_log = _directory_log(entry)
                    if directory_log is not None:
                        logs.append(directory_log)
                    elif depth < MAX_SCAN_DEPTH:
                        subdirectories.append((entry, depth + 1))
                    else:
                        errors.append(f"{entry}: nested deeper than {MAX_SCAN_DEPTH} directories; not scanned")
                elif skipped_when_scanning(entry.name, is_file=True):
                    continue
                elif stat.S_ISREG(mode):
                    logs.append(single_file_log(entry))
                else:  # a FIFO, socket or device: opening one could block for ever
                    errors.append(f"{entry}: {NOT_REGULAR}")
            except EventLogError as error:
                errors.append(str(error))
            except OSError as error:
                errors.append(f"{entry}: cannot read ({error.strerror or error})")
        pending.extend(reversed(subdirectories))  # popped in name order, as the recursive scan visited them


def _list_dir(directory: Path) -> list[Path]:
    try:
        return sorted(directory.iterdir())
    except OSError as error:
        raise EventLogError(f"{directory}: cannot list directory ({error.strerror or error})") from None


def regular_file_problem(path: Path) -> str | None:
    """Why ``path`` is not a regular file to open ("not a regular file", "no such file", ...), None when it is.

    Checked with ``stat``, which never blocks: for listings, before anything is opened. Opening goes through
    :func:`open_regular`, which checks the file it opened (the path may have changed in between).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"cannot read ({error.strerror or error})"
    return _mode_problem(mode)


def _mode_problem(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return "is a directory, expected a file"
    return None if stat.S_ISREG(mode) else NOT_REGULAR


class NotRegularFile(OSError):
    """``open_regular`` refused a path that is not a regular file (the message says what it is)."""


def open_regular(path: Path, buffering: int = -1) -> BinaryIO:
    """``path`` opened for binary reading, only if it is a regular file; NotRegularFile (an OSError) if not.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` on the descriptor itself, so there is no window between
    a check and the open: a FIFO put in the file's place is refused at once instead of blocking ``open()`` for ever
    waiting for a writer. The flag is cleared before any read. Symbolic links are followed: directory scans take
    linked logs on purpose (``_scan``).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        problem = _mode_problem(os.fstat(fd).st_mode)
        if problem is not None:
            raise NotRegularFile(f"{path}: {problem}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def _read_head(path: Path) -> bytes:
    try:
        with open_regular(path) as fh:
            return fh.read(HEAD_SIZE)
    except NotRegularFile as error:
        raise EventLogError(str(error)) from None
    except IsADirectoryError:
        raise EventLogError(f"{path}: is a directory, expected a file") from None
    except FileNotFoundError:
        raise EventLogError(f"{path}: no such file") from None
    except OSError as error:
        raise EventLogError(f"{path}: cannot read ({error.strerror or error})") from None


def _strip_suffixes(name: str) -> str:
    """``local-1.zstd.inprogress`` -> ``local-1``: drop the progress/compaction markers, then a codec suffix."""
    for marker in (IN_PROGRESS, COMPACT, IN_PROGRESS):
        name = name.removesuffix(marker)
    if codec_from_name(name) is not None:
        name = name.rpartition(".")[0]
    return name


def _app_and_attempt(name: str) -> tuple[str | None, str | None]:
    match = _APP_AND_ATTEMPT.fullmatch(name)
    if match is None:
        return None, None
    return match["app"], match["attempt"]


def in_progress_reason(log: EventLog) -> str:
    """Why a log counts as still being written, for the warning that says so."""
    if log.layout == ROLLING:
        return "no finished appstatus marker (absent or .inprogress)"
    return "name ends with .inprogress"


def _sanitized(text: str) -> str:
    """Spark's ``Utils.sanitizeDirName``, which ``EventLogFileWriter.nameForAppAndAttempt`` applies to both ids."""
    return _SPARK_NAME_DOTS.sub("_", _SPARK_NAME_SEPARATORS.sub("-", text)).lower()


def spark_log_names(app_id: str, attempt_id: str | None) -> list[str]:
    """The names Spark gives the log of the app (attempt given, or none and attempts 1..``MAX_ATTEMPTS_LOOKED_UP``):
    single files with any codec suffix and rolling directories; none for an id no log can be named after."""
    if not app_id or len(app_id) > 200 or any(ord(c) < 32 or c == "\\" for c in app_id + (attempt_id or "")):
        return []  # sanitized names hold no "/" nor "."; these could still not name a file in the directory
    base = _sanitized(app_id)
    attempts = [attempt_id] if attempt_id else ["", *(str(n) for n in range(1, MAX_ATTEMPTS_LOOKED_UP + 1))]
    stems = [f"{base}_{_sanitized(attempt)}" if attempt else base for attempt in attempts]
    suffixes = ["", *(f".{suffix}" for suffix in SUFFIX_CODECS)]
    return [name for stem in stems for name in (*(stem + s for s in suffixes), f"{ROLLING_DIR_PREFIX}{stem}")]


__all__ = (
    "DATABRICKS",
    "MAX_SCAN_DEPTH",
    "NOT_REGULAR",
    "ROLLING",
    "SINGLE",
    "EventLog",
    "EventLogError",
    "EventLogPart",
    "NotRegularFile",
    "RollingSelection",
    "databricks_listing",
    "databricks_selection",
    "directory_layout",
    "find_event_logs",
    "in_progress_reason",
    "name_hints",
    "open_regular",
    "regular_file_problem",
    "rolling_listing",
    "rolling_selection",
    "single_file_log",
    "skipped_when_scanning",
    "spark_log_names",
)
