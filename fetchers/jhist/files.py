"""Where job-history files are and what their names say: the JobHistory Server's done layout, done-file names.

The JobHistory Server keeps files under ``mapreduce.jobhistory.done-dir`` and ``intermediate-done-dir``:
``done/yyyy/MM/dd/NNNNNN/<index name>.jhist`` + ``<jobid>_conf.xml`` once the server has moved them, and
``done_intermediate/<user>/`` before. See :func:`done_day_directory` for the time-zone rule.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Final
from urllib.parse import unquote_plus
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fetchers.eventlog.layout import MAX_SCAN_DEPTH, NOT_REGULAR, regular_file_problem

CONF_SUFFIX: Final = "_conf.xml"
JHIST_SUFFIX: Final = ".jhist"


@dataclass(frozen=True, slots=True)
class JobIndex:
    """What the JobHistory Server encodes in a done file's name:
    ``jobId-submitTime-user-jobName-finishTime-maps-reduces-status-queue[-startTime].jhist``."""

    job_id: str
    submit_ms: int
    user: str
    job_name: str
    finish_ms: int
    maps: int
    reduces: int
    status: str
    queue: str
    start_ms: int | None


@dataclass(frozen=True, slots=True)
class JobHistoryFiles:
    jhist: Path
    conf: Path | None
    job_id: str | None  # from the file name; None when the name does not start with a job id
    index: JobIndex | None


def parse_index_name(filename: str) -> JobIndex | None:
    """The fields of a done file's name (Hadoop's FileNameIndexUtils), or None when it is not such a name.

    Fields are URL-encoded with ``-`` escaped as ``%2D`` (so ``Sleep+job`` is "Sleep job").
    """
    if not filename.endswith(JHIST_SUFFIX):
        return None
    fields = filename[: -len(JHIST_SUFFIX)].split("-")
    if len(fields) not in (9, 10) or not fields[0].startswith("job_"):
        return None
    try:
        values = [unquote_plus(f) for f in fields]
        return JobIndex(
            job_id=values[0],
            submit_ms=int(values[1]),
            user=values[2],
            job_name=values[3],
            finish_ms=int(values[4]),
            maps=int(values[5]),
            reduces=int(values[6]),
            status=values[7],
            queue=values[8],
            start_ms=int(values[9]) if len(values) == 10 else None,
        )
    except ValueError:
        return None


def _job_id_of(filename: str) -> str | None:
    stem = filename[: -len(JHIST_SUFFIX)] if filename.endswith(JHIST_SUFFIX) else filename
    head = stem.split("-", 1)[0]
    parts = head.split("_")
    if len(parts) == 3 and parts[0] == "job" and parts[1].isdigit() and parts[2].isdigit():
        return head
    return None


def _zone(tz: str | tzinfo | None) -> tzinfo | None:
    if tz is None or isinstance(tz, tzinfo):
        return tz
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc


def done_day_directory(finish_ms: int, tz: str | tzinfo | None = None) -> str:
    """``yyyy/MM/dd`` of the done directory the JobHistory Server files a job under, from its finish time.

    Hadoop computes it with ``Calendar.getInstance()`` (``JobHistoryUtils.timestampDirectoryComponent``), i.e.
    in the default time zone of the JobHistory Server's JVM (``-Duser.timezone`` or the host's TZ); no Hadoop
    property sets it. Dr. Elephant used its own JVM's zone (or a fixed ``history_server_time_zone``) and missed
    jobs near midnight. Pass the server's zone as ``tz`` (an IANA name such as ``"America/Los_Angeles"`` or a
    tzinfo); None means the zone of the machine running Hindsight, which is right when both run on hosts set
    alike. :func:`locate_history_files` also probes the neighbouring days, so a wrong zone costs a lookup, not a job.
    """
    zone = _zone(tz)
    moment = datetime.fromtimestamp(finish_ms / 1000, tz=UTC)
    local = moment.astimezone(zone) if zone is not None else moment.astimezone()
    return f"{local.year:04d}/{local.month:02d}/{local.day:02d}"


def serial_directory(job_id: str) -> str:
    """The ``NNNNNN`` part: the job's sequence number as 9 digits, first 6 kept (1000 jobs per directory)."""
    try:
        serial = int(job_id.rsplit("_", 1)[1])
    except (IndexError, ValueError) as exc:
        raise ValueError(f"not a job id: {job_id!r}") from exc
    return f"{serial:09d}"[:6]


def history_subdirectory(job_id: str, finish_ms: int, tz: str | tzinfo | None = None) -> str:
    """``yyyy/MM/dd/NNNNNN``: where under the done directory a finished job's files are."""
    return f"{done_day_directory(finish_ms, tz)}/{serial_directory(job_id)}"


def _files_in(directory: Path, job_id: str) -> JobHistoryFiles | None:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    for name in names:
        if name.endswith(JHIST_SUFFIX) and (name.startswith(f"{job_id}-") or name == f"{job_id}{JHIST_SUFFIX}"):
            conf = directory / f"{job_id}{CONF_SUFFIX}"
            return JobHistoryFiles(directory / name, conf if conf.is_file() else None, job_id, parse_index_name(name))
    return None


def locate_history_files(
    done_dir: Path,
    job_id: str,
    finish_ms: int | None = None,
    *,
    tz: str | tzinfo | None = None,
    intermediate_dir: Path | None = None,
    user: str | None = None,
) -> JobHistoryFiles | None:
    """Find one job's files as the JobHistory Server lays them out, or None.

    Looks in ``done_dir/<yyyy/MM/dd of finish_ms in tz>/<serial>/``, then the day before and after (a zone
    mismatch moves a job by at most a day), then ``intermediate_dir/<user>/`` (every user directory when
    ``user`` is None) for jobs the server has not moved yet.
    """
    serial = serial_directory(job_id)
    if finish_ms is not None:
        day_ms = 86_400_000
        for shift in (0, -day_ms, day_ms):
            found = _files_in(done_dir / done_day_directory(finish_ms + shift, tz) / serial, job_id)
            if found:
                return found
    if intermediate_dir is not None:
        if user is not None:
            return _files_in(intermediate_dir / user, job_id)
        try:
            users = sorted(p for p in intermediate_dir.iterdir() if p.is_dir())
        except OSError:
            return None
        for user_dir in users:
            found = _files_in(user_dir, job_id)
            if found:
                return found
    return None


def find_history_files(path: Path) -> tuple[list[JobHistoryFiles], list[str]]:
    """Every ``.jhist`` file at or under ``path`` (a file, any directory, a done or done_intermediate tree), each
    with its ``<jobid>_conf.xml`` when one sits next to it; plus one error line per problem.

    Only regular files are taken (checked with ``stat``: opening a FIFO blocks); directories are scanned with an
    explicit stack down to ``MAX_SCAN_DEPTH`` levels (deeper ones are an error line), hidden ones skipped."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return [], [f"{path}: no such file or directory"]
    except OSError as error:
        return [], [f"{path}: cannot read ({error.strerror or error})"]
    if stat.S_ISREG(mode):
        job_id = _job_id_of(path.name)
        conf = path.with_name(f"{job_id}{CONF_SUFFIX}") if job_id else None
        return [JobHistoryFiles(path, _regular_or_none(conf), job_id, parse_index_name(path.name))], []
    if not stat.S_ISDIR(mode):
        return [], [f"{path}: {NOT_REGULAR}"]
    found: list[JobHistoryFiles] = []
    errors: list[str] = []
    pending: list[tuple[Path, int]] = [(path, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            errors.append(f"{directory}: cannot list ({error.strerror or error})")
            continue
        regular: set[str] = set()
        histories: list[str] = []
        subdirectories: list[tuple[Path, int]] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue  # hidden files include Hadoop's local-FS .crc checksums
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_SCAN_DEPTH:
                        subdirectories.append((Path(entry.path), depth + 1))
                    else:
                        errors.append(f"{entry.path}: nested deeper than {MAX_SCAN_DEPTH} directories; not scanned")
                    continue
                is_regular = stat.S_ISREG(entry.stat().st_mode)  # follows links to files, as os.walk did
            except OSError as error:
                errors.append(f"{entry.path}: cannot read ({error.strerror or error})")
                continue
            if is_regular:
                regular.add(entry.name)
            if entry.name.endswith(JHIST_SUFFIX):
                if is_regular:
                    histories.append(entry.name)
                else:  # a FIFO, socket or device named *.jhist: opening it could block for ever
                    errors.append(f"{entry.path}: {NOT_REGULAR}")
        for name in histories:
            job_id = _job_id_of(name)
            conf_name = f"{job_id}{CONF_SUFFIX}" if job_id else None
            conf = directory / conf_name if conf_name and conf_name in regular else None
            found.append(JobHistoryFiles(directory / name, conf, job_id, parse_index_name(name)))
        pending.extend(reversed(subdirectories))  # popped in name order, as os.walk visited them
    if not found and not errors:
        errors.append(f"{path}: no .jhist job-history files found")
    return found, errors


def _regular_or_none(path: Path | None) -> Path | None:
    """``path`` when it is a regular file (stat only: never blocks on a FIFO), else None."""
    return path if path is not None and regular_file_problem(path) is None else None
