"""The ``eventlog-dir`` backend: Spark event logs in local directories (``spark.eventLog.dir`` or a copy of it).

Listing finds every log under the configured directories (single files, rolling ``eventlog_v2_*`` and Databricks
directories, any codec: ``fetchers.eventlog``) and keeps the complete ones that finished in the asked window.

Completion time is the log's modification time, in ms: a single file's mtime; for a directory the newest mtime
of its event parts (a History Server ``.compact`` file is ignored when another part is there: compaction
rewrites old parts long after the app ended) and of its ``appstatus_*`` marker. Why: listing then costs one
``stat`` per file and parses nothing, and Spark writes the last event (ApplicationEnd) just before it closes
and renames the log, so the mtime is the end of the app within the flush interval.

A log still in progress (``.inprogress`` name, or a rolling directory without a finished appstatus marker) is
skipped until it completes. Its mtime is its last write, which may fall in a window already listed when the
rename came later; so a log seen in progress by this backend instance is listed by the first listing that
sees it complete, whatever its mtime. An app whose driver died leaves its log ``.inprogress`` for ever: it is
never listed (like Dr. Elephant, which only analyzes finished apps).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Final

from analyzer.appmodel.redaction import Redactor
from analyzer.appmodel.spark import SparkApp
from fetchers.backends import REDACTION_PARAMETER, AppRef, Backend, BackendError, Parameter, ParameterError, register
from fetchers.eventlog import EventLog, EventLogError, find_event_logs
from fetchers.eventlog.layout import APPSTATUS_PREFIX, COMPACT, IN_PROGRESS
from fetchers.spark_eventlog import read_apps

__all__ = ("EventLogDirectoryBackend", "completion_ms")

logger = logging.getLogger(__name__)

_URL_SCHEME: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_HADOOP_SCHEMES: Final = frozenset({"hdfs", "webhdfs", "swebhdfs", "viewfs"})


@register
class EventLogDirectoryBackend(Backend):
    name = "eventlog-dir"
    label = "Spark event-log directory"
    parameters = (
        Parameter("paths", list, "Local directories holding Spark event logs (file:// URLs accepted)", required=True),
        REDACTION_PARAMETER,
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.directories = [_local_directory(path) for path in self.params["paths"]]
        if not self.directories:
            raise ParameterError(f"{self.name}.paths: at least one directory is needed")
        try:
            Redactor(self.params["redaction_patterns"])
        except ValueError as error:
            raise ParameterError(f"{self.name}.redaction_patterns: {error}") from None
        self._seen_in_progress: set[str] = set()  # logs skipped while being written, by their final path
        self._reported: set[str] = set()  # unusable entries already logged, so each is logged once

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        refs: list[AppRef] = []
        for directory in self.directories:
            for log in self._logs_in(directory):
                key = _final_path(log)
                if log.in_progress:
                    self._seen_in_progress.add(key)
                    continue
                try:
                    finished = completion_ms(log)
                except OSError as error:  # removed or rotated away since it was found
                    self._report(f"{log.path}: cannot stat ({error.strerror or error})")
                    continue
                late = key in self._seen_in_progress and finished < end_ms
                if late or start_ms <= finished < end_ms:
                    self._seen_in_progress.discard(key)
                    refs.append(_ref(log, finished))
        refs.sort(key=lambda ref: (ref.finished_ms or 0, ref.extra["path"]))
        return refs

    def fetch(self, ref: AppRef) -> SparkApp:
        raw = ref.extra.get("path")
        if not isinstance(raw, str) or not raw:
            raise BackendError(f"{ref.app_id}: reference without a log path", permanent=True)
        path = Path(raw)
        # A stored reference must not reach outside the configured directories.
        if not any(_is_within(path, directory) for directory in self.directories):
            raise BackendError(f"{path}: not under the configured event-log directories", permanent=True)
        if not os.path.lexists(path):
            raise BackendError(f"{path}: the event log is gone (deleted or moved)", permanent=True)
        errors: list[str] = []
        for outcome in read_apps(path, self.params["redaction_patterns"]):
            if outcome.app is not None:
                return outcome.app
            errors.append(outcome.error or f"{outcome.source}: unreadable")
        raise BackendError(errors[0] if errors else f"{path}: no event log there")

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
    parts = [part.path for part in log.parts if not part.path.name.endswith(COMPACT)] or [log.parts[-1].path]
    markers = [entry for entry in log.path.iterdir() if entry.name.startswith(APPSTATUS_PREFIX)]
    return max(_mtime_ms(path) for path in [*parts, *markers])


def _mtime_ms(path: Path) -> int:
    return path.stat().st_mtime_ns // 1_000_000


def _ref(log: EventLog, finished_ms: int) -> AppRef:
    app_id = log.app_id_hint or log.path.name.removesuffix(IN_PROGRESS)
    return AppRef(app_id=app_id, attempt_id=log.attempt_hint, finished_ms=finished_ms, extra={"path": str(log.path)})


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
    if scheme in _HADOOP_SCHEMES:
        raise BackendError(
            f"eventlog-dir: {given}: HDFS paths need WebHDFS, which is not supported yet; "
            "use a local or mounted directory, or the cluster's History Server",
            permanent=True,
        )
    raise BackendError(f"eventlog-dir: {given}: {scheme}:// is not supported; use a local directory", permanent=True)


def _is_within(path: Path, directory: Path) -> bool:
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # unresolvable or a symlink loop
        return False
