"""The ``eventlog-dir`` backend: Spark event logs in directories, local or on HDFS over WebHDFS.

Listing finds every log under the configured directories (single files, rolling ``eventlog_v2_*`` and Databricks
directories, any codec: the rules of ``fetchers.eventlog``) and keeps the complete ones that finished in the asked
window. A path is a local directory (or ``file://`` URL), or an HDFS directory read over WebHDFS:
``webhdfs://namenode:9870/spark-logs`` (http), ``swebhdfs://namenode:9871/spark-logs`` (https), or Spark's own
``hdfs://nameservice/spark-logs`` together with ``webhdfs_url`` naming the NameNodes' HTTP(S) addresses (several
for HA: a standby one is passed over). ``hdfs_user`` is sent as ``user.name`` (simple authentication); the HTTP
parameters (TLS, basic, bearer through a gateway, SPNEGO for Kerberos) apply to every WebHDFS request.

Completion time is the log's modification time, in ms: a single file's mtime; for a directory the newest mtime
of its event parts (a History Server ``.compact`` file is ignored when another part is there: compaction
rewrites old parts long after the app ended) and of its ``appstatus_*`` marker. Why: listing then costs one
``stat`` per file (one LISTSTATUS per directory on HDFS) and parses nothing, and Spark writes the last event
(ApplicationEnd) just before it closes and renames the log, so the mtime is the end of the app within the flush
interval. On HDFS the names are classified exactly as on disk; a single file is listed only after its first bytes
show a known event-log format (one small read, for logs in the window only).

A log still in progress (``.inprogress`` name, or a rolling directory without a finished appstatus marker) is
skipped until it completes. Its mtime is its last write, which may fall in a window already listed when the
rename came later (an HDFS rename keeps the mtime); so a log seen in progress is remembered, in ``state``, which
the poller stores with the source, and listed by the first listing that sees it complete, whatever its mtime,
even after a restart. The memory holds only logs still there (up to ``max_remembered``, oldest dropped). An app
whose driver died leaves its log ``.inprogress`` for ever: it is never listed (like Dr. Elephant, which only
analyzes finished apps).

A WebHDFS fetch streams the log's files (only the parts that are read, and the status marker) into a temporary
directory under their own names, reads it like a local log, and removes it; a log larger than ``max_log_bytes``
is refused.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

from appmodel.redaction import Redactor
from appmodel.spark import SparkApp
from fetchers.backends import REDACTION_PARAMETER, AppRef, Backend, BackendError, Parameter, ParameterError, register
from fetchers.eventlog import EventLog, EventLogError, find_event_logs
from fetchers.eventlog.codecs import HEAD_SIZE, UnknownFormat, detect_codec
from fetchers.eventlog.layout import (
    APPSTATUS_PREFIX,
    COMPACT,
    IN_PROGRESS,
    MAX_SCAN_DEPTH,
    ROLLING,
    SINGLE,
    databricks_selection,
    directory_layout,
    name_hints,
    rolling_selection,
    skipped_when_scanning,
)
from fetchers.http import HTTP_PARAMETERS, HttpPolicy
from fetchers.spark_eventlog import read_apps
from fetchers.webhdfs import FileStatus, NotFound, WebHdfsClient, WebHdfsLocation, normalize_path, parse_location

__all__ = ("EventLogDirectoryBackend", "completion_ms")

logger = logging.getLogger(__name__)

_URL_SCHEME: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_WEBHDFS_SCHEMES: Final = frozenset({"hdfs", "webhdfs", "swebhdfs"})
_STATE_KEY: Final = "in_progress"


@dataclass(frozen=True)
class _Found:
    """A log a listing saw, before the window is applied."""

    key: str  # where the log is once complete (path or URL): what the in-progress memory and refs hold
    in_progress: bool
    finished_ms: int | None  # None when it could not be told (reported)
    make_ref: Callable[[int], AppRef | None]  # None: not an event log after all (reported)


@register
class EventLogDirectoryBackend(Backend):
    name = "eventlog-dir"
    label = "Spark event-log directory"
    parameters = (
        Parameter(
            "paths",
            list,
            "Directories holding Spark event logs: local (file:// accepted), webhdfs://namenode:9870/dir, "
            "swebhdfs://namenode:9871/dir, or hdfs://nameservice/dir with webhdfs_url",
            required=True,
        ),
        Parameter("webhdfs_url", list, "NameNode HTTP(S) addresses for hdfs:// paths (several for HA)", default=()),
        Parameter("hdfs_user", str, "HDFS user sent as user.name (simple authentication, no Kerberos)"),
        REDACTION_PARAMETER,
        *HTTP_PARAMETERS,
    )
    max_log_bytes: ClassVar[int] = 64 * 2**30  # a WebHDFS log larger than this is not downloaded
    max_remembered: ClassVar[int] = 100_000  # logs remembered as seen in progress

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if not self.params["paths"]:
            raise ParameterError(f"{self.name}.paths: at least one directory is needed")
        try:
            Redactor(self.params["redaction_patterns"])
        except ValueError as error:
            raise ParameterError(f"{self.name}.redaction_patterns: {error}") from None
        self._reported: set[str] = set()  # unusable entries already logged, so each is logged once
        self.directories: list[Path] = []
        self.remote: list[_WebHdfsRoot] = []
        clients: dict[tuple[str, ...], WebHdfsClient] = {}
        policy: HttpPolicy | None = None
        for given in self.params["paths"]:
            match = _URL_SCHEME.match(given)
            scheme = match["scheme"].lower() if match else ""
            if scheme not in _WEBHDFS_SCHEMES:
                self.directories.append(_local_directory(given))
                continue
            location = parse_location(given, self.params["webhdfs_url"])
            policy = policy or HttpPolicy.from_params(self.params)
            client = clients.setdefault(
                location.base_urls,
                WebHdfsClient(location.base_urls, policy, user=self.params["hdfs_user"], report=self._report),
            )
            self.remote.append(_WebHdfsRoot(location, client, self._report))

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        remembered = self._remembered()
        present: set[str] = set()
        refs: list[AppRef] = []
        for found in self._found():
            present.add(found.key)
            if found.in_progress:
                remembered.setdefault(found.key, None)
                continue
            if found.finished_ms is None:
                continue
            late = found.key in remembered and found.finished_ms < end_ms
            if late or start_ms <= found.finished_ms < end_ms:
                remembered.pop(found.key, None)
                ref = found.make_ref(found.finished_ms)
                if ref is not None:
                    refs.append(ref)
        # Only logs still there are remembered, newest last; the state is replaced only after a whole listing.
        kept = [key for key in remembered if key in present]
        self.state[_STATE_KEY] = kept[-self.max_remembered :] if self.max_remembered > 0 else []
        refs.sort(key=lambda ref: (ref.finished_ms or 0, ref.extra["path"]))
        return refs

    def fetch(self, ref: AppRef) -> SparkApp:
        raw = ref.extra.get("path")
        if not isinstance(raw, str) or not raw:
            raise BackendError(f"{ref.app_id}: reference without a log path", permanent=True)
        for root in self.remote:
            hdfs_path = root.owned(raw)
            if hdfs_path is not None:
                return root.fetch(raw, hdfs_path, self.params["redaction_patterns"], self.max_log_bytes)
        path = Path(raw)
        # A stored reference must not reach outside the configured directories.
        if not any(_is_within(path, directory) for directory in self.directories):
            raise BackendError(f"{raw}: not under the configured event-log directories", permanent=True)
        if not os.path.lexists(path):
            raise BackendError(f"{path}: the event log is gone (deleted or moved)", permanent=True)
        errors: list[str] = []
        for outcome in read_apps(path, self.params["redaction_patterns"]):
            if outcome.app is not None:
                return outcome.app
            if outcome.over_budget:  # another try would take as long again: the app is failed at once
                raise BackendError(outcome.error or f"{path}: over its read budget", permanent=True)
            errors.append(outcome.error or f"{outcome.source}: unreadable")
        raise BackendError(errors[0] if errors else f"{path}: no event log there")

    def _remembered(self) -> dict[str, None]:
        """The logs seen in progress, oldest first, from ``state`` (whatever a database held: bad items dropped)."""
        if not isinstance(self.state, dict):
            self.state = {}
        raw = self.state.get(_STATE_KEY)
        return dict.fromkeys(item for item in raw if isinstance(item, str)) if isinstance(raw, list) else {}

    def _found(self) -> Iterator[_Found]:
        for directory in self.directories:
            for log in self._logs_in(directory):
                try:
                    finished: int | None = completion_ms(log)
                except OSError as error:  # removed or rotated away since it was found
                    self._report(f"{log.path}: cannot stat ({error.strerror or error})")
                    finished = None
                yield _Found(_final_path(log), log.in_progress, finished, _local_ref(log))
        for root in self.remote:
            yield from root.found()

    def _logs_in(self, directory: Path) -> list[EventLog]:
        # A missing or unreadable directory (an unmounted share) is an error, not an empty listing: the caller
        # would move on and never list what finished there.
        if not directory.is_dir() or not os.access(directory, os.R_OK | os.X_OK):
            raise BackendError(f"{self.name}: {directory} is not a readable directory")
        try:
            logs, errors = find_event_logs(directory)
        except EventLogError as error:
            # An empty directory (a new cluster) or one holding only unusable entries: nothing finished there.
            self._report(str(error))
            return []
        for problem in errors:
            self._report(problem)
        return logs

    def _report(self, problem: str) -> None:
        if problem not in self._reported:
            self._reported.add(problem)
            logger.warning("%s: ignored: %s", self.name, problem)


def completion_ms(log: EventLog) -> int:
    """When the log was last written, ms since the epoch (see the module docstring); raises OSError."""
    if len(log.parts) == 1 and log.parts[0].path == log.path:
        return _mtime_ms(log.path)
    parts = [(part.path.name, _mtime_ms(part.path)) for part in log.parts]
    markers = [_mtime_ms(entry) for entry in log.path.iterdir() if entry.name.startswith(APPSTATUS_PREFIX)]
    return _newest(parts, markers)


def _newest(parts: Sequence[tuple[str, int]], markers: Sequence[int]) -> int:
    """The completion rule of a directory log: (name, mtime) of its parts in reading order, its markers' mtimes."""
    written = [ms for name, ms in parts if not name.endswith(COMPACT)] or [parts[-1][1]]
    return max([*written, *markers])


def _mtime_ms(path: Path) -> int:
    return path.stat().st_mtime_ns // 1_000_000


def _local_ref(log: EventLog) -> Callable[[int], AppRef]:
    def make(finished_ms: int) -> AppRef:
        app_id = log.app_id_hint or log.path.name.removesuffix(IN_PROGRESS)
        return AppRef(app_id, log.attempt_hint, finished_ms, extra={"path": str(log.path)})

    return make


def _final_path(log: EventLog) -> str:
    """The path the log has once complete: a single file loses its ``.inprogress``; a directory keeps its name."""
    return str(log.path).removesuffix(IN_PROGRESS)


def _local_directory(given: str) -> Path:
    match = _URL_SCHEME.match(given)
    if match is None:
        return Path(given).expanduser()
    scheme = match["scheme"].lower()
    if scheme == "file":
        return Path(given[len(match[0]) :] or "/")
    if scheme == "viewfs":
        raise ParameterError(
            f"eventlog-dir.paths: {given}: viewfs:// mount tables are not resolved here; "
            "give the hdfs:// (with webhdfs_url) or webhdfs:// path of the directory it points to"
        )
    raise ParameterError(
        f"eventlog-dir.paths: {given}: {scheme}:// is not supported; "
        "use a local directory, webhdfs://, swebhdfs:// or hdfs:// with webhdfs_url"
    )


def _is_within(path: Path, directory: Path) -> bool:
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # unresolvable or a symlink loop
        return False


class _WebHdfsRoot:
    """One configured HDFS directory: its listing and the fetch of the logs under it."""

    def __init__(self, location: WebHdfsLocation, client: WebHdfsClient, report: Callable[[str], None]) -> None:
        self.location = location
        self.client = client
        self.report = report

    def owned(self, key: str) -> str | None:
        """The HDFS path of a listed log's location, None when it is not under this directory."""
        display = self.location.display
        if key != display and not key.startswith(display.rstrip("/") + "/"):
            return None
        rest = key[len(display) :]
        try:
            relative = normalize_path(rest)
        except ParameterError:
            return None
        if rest.strip("/") != relative.strip("/"):  # "a//b", "a/./b": not a location a listing gives
            return None
        return normalize_path(f"{self.location.path}/{relative}")

    def found(self) -> Iterator[_Found]:
        path, display = self.location.path, self.location.display
        try:
            entries = self.client.list_status(path)
        except NotFound:
            # Like a missing local directory: an error to retry, not an empty listing (the cluster may create it).
            raise BackendError(f"eventlog-dir: {display} does not exist on HDFS") from None
        if len(entries) == 1 and entries[0].name == "" and not entries[0].is_dir:  # the path is a file
            yield from self._single(path, display, entries[0])
            return
        layout = directory_layout(posixpath.basename(path), [e.name for e in entries if not e.is_dir])
        if layout is None:
            yield from self._scan(path, display, entries, 0)
        else:
            found = self._directory_log(path, display, layout, entries)
            if found is not None:
                yield found

    def _scan(self, path: str, display: str, entries: list[FileStatus], depth: int) -> Iterator[_Found]:
        for entry in entries:
            if not entry.name or skipped_when_scanning(entry.name, is_file=not entry.is_dir):
                continue
            child, child_display = f"{path.rstrip('/')}/{entry.name}", f"{display.rstrip('/')}/{entry.name}"
            if not entry.is_dir:
                yield from self._single(child, child_display, entry)
                continue
            try:
                children = self.client.list_status(child)
            except NotFound:  # removed since its parent was listed
                continue
            layout = directory_layout(entry.name, [c.name for c in children if not c.is_dir])
            if layout is not None:
                found = self._directory_log(child, child_display, layout, children)
                if found is not None:
                    yield found
            elif depth < MAX_SCAN_DEPTH:
                yield from self._scan(child, child_display, children, depth + 1)
            else:
                self.report(f"{child_display}: nested deeper than {MAX_SCAN_DEPTH} directories; not scanned")

    def _single(self, path: str, display: str, status: FileStatus) -> Iterator[_Found]:
        name = posixpath.basename(path)
        in_progress = name.endswith(IN_PROGRESS)
        if status.length == 0 and not in_progress:
            self.report(f"{display}: empty file, no events")
            return

        def make_ref(finished_ms: int) -> AppRef | None:
            try:
                head = self.client.read_head(path, HEAD_SIZE)
                detect_codec(name, head)
            except NotFound:
                self.report(f"{display}: gone before it could be read")
                return None
            except UnknownFormat as error:
                self.report(f"{display}: not an event log: {error}")
                return None
            app, attempt = name_hints(name, SINGLE)
            return AppRef(app or name, attempt, finished_ms, extra={"path": display})

        yield _Found(display.removesuffix(IN_PROGRESS), in_progress, status.mtime_ms, make_ref)

    def _directory_log(self, path: str, display: str, layout: str, entries: list[FileStatus]) -> _Found | None:
        name = posixpath.basename(path)
        wanted, in_progress, markers = _wanted_files(layout, entries)
        if not wanted:
            self.report(f"{display}: {layout} event log directory without event files")
            return None
        finished = _newest([(f.name, f.mtime_ms) for f in wanted], [m.mtime_ms for m in markers])
        app, attempt = name_hints(name, layout)

        def make_ref(finished_ms: int) -> AppRef:
            return AppRef(app or name, attempt, finished_ms, extra={"path": display})

        return _Found(display, in_progress, finished, make_ref)

    def fetch(self, key: str, path: str, redaction_patterns: Sequence[str], max_bytes: int) -> SparkApp:
        """Downloads the log at ``path`` into a temporary directory and reads it; the directory is always removed."""
        try:
            status = self.client.file_status(path)
            entries = self.client.list_status(path) if status.is_dir else [status]
        except NotFound:
            raise BackendError(f"{key}: the event log is gone (deleted or moved)", permanent=True) from None
        name = posixpath.basename(path) or "eventlog"
        if status.is_dir:
            layout = directory_layout(name, [e.name for e in entries if not e.is_dir])
            if layout is None:
                raise BackendError(f"{key}: a directory that holds no event log", permanent=True)
            parts, _, markers = _wanted_files(layout, entries)
            files = [*parts, *markers]
        else:
            files = [status]
        total = sum(f.length for f in files)
        if total > max_bytes:
            raise BackendError(f"{key}: {total} bytes, larger than the limit of {max_bytes}; refused", permanent=True)
        with tempfile.TemporaryDirectory(prefix="hindsight-webhdfs-") as temp:
            local = Path(temp) / name
            if status.is_dir:
                local.mkdir()
            budget = max_bytes
            for part in files:
                source = f"{path}/{part.name}" if status.is_dir else path
                target = local / part.name if status.is_dir else local
                try:
                    with target.open("wb") as out:
                        budget -= self.client.download(source, out, max_bytes=budget)
                except NotFound:  # a part replaced by compaction or the log removed meanwhile: list again later
                    raise BackendError(f"{key}: {part.name} vanished while downloading; retried later") from None
            return _read_download(local, key, redaction_patterns)


def _wanted_files(layout: str, entries: list[FileStatus]) -> tuple[list[FileStatus], bool, list[FileStatus]]:
    """(event parts in reading order, in progress, appstatus markers) of a directory log's listing."""
    files = {entry.name: entry for entry in entries if not entry.is_dir and entry.name}
    if layout == ROLLING:
        selection = rolling_selection(files)
        parts = [files[name] for _, name in selection.parts]
        return parts, selection.in_progress, [files[name] for name in selection.markers]
    return [files[name] for name in databricks_selection(files)], False, []


def _read_download(local: Path, key: str, redaction_patterns: Sequence[str]) -> SparkApp:
    """The app of a downloaded log, named by its HDFS location (the temporary copy is gone once returned)."""

    def named(text: str) -> str:
        return text.replace(str(local), key)

    errors: list[str] = []
    for outcome in read_apps(local, redaction_patterns):
        if outcome.app is not None:
            app = outcome.app
            app.source = key
            app.warnings[:] = [named(warning) for warning in app.warnings]
            return app
        if outcome.over_budget:
            raise BackendError(named(outcome.error or f"{outcome.source}: over its read budget"), permanent=True)
        errors.append(named(outcome.error or f"{outcome.source}: unreadable"))
    raise BackendError(errors[0] if errors else f"{key}: no event log there")  # as for a local log
