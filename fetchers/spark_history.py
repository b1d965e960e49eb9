"""Spark History Server backend: list finished applications over its REST API and fetch their event logs.

By default the History Server is asked for the list and for the event log itself
(``/applications/<id>[/<attempt>]/logs``, a zip), not for its parsed views: the log is streamed to a temporary
file, its members are extracted (safely: no path outside the temporary directory, bounded sizes) and read by the
same reader as logs on disk. This spares the server's memory and gives the same model whichever way a log arrives.

``fetch_mode`` chooses the source of each app: ``log`` (the event log only), ``rest`` (the server's parsed REST
views only, see ``fetchers.spark_history_rest``) or ``auto`` (the default): the log, and the REST views when the
logs endpoint is refused or missing (HTTP 403, 404, 405, 410: some deployments turn it off or proxy it away) or
what it gives is not a usable archive or log. Transient failures (timeouts, 5xx after retries, a log still
being written) never fall back: they stay transient, and the next run tries the log again; neither does a 401
(the REST views would refuse the same credentials). The status is read from the message ``fetchers.http`` writes.

Limits worth knowing: ``status=completed`` makes the server leave out an app whose latest attempt still runs,
so an earlier finished attempt of such an app is listed with the app once its latest attempt is done; a log
still being written is refused as a transient error (the next run fetches it once complete).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import lzma
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any, ClassVar, Final
from urllib.parse import quote, urlsplit

import requests

from appmodel.spark import SparkApp
from fetchers.backends import REDACTION_PARAMETER, AppRef, Backend, BackendError, Parameter, ParameterError, register
from fetchers.eventlog import EventLogError, find_event_logs
from fetchers.http import HTTP_PARAMETERS, HttpPolicy, download, get_json, mask_url, session_for
from fetchers.spark_eventlog import read_apps
from fetchers.spark_history_rest import DEFAULT_MAX_TASKS, DEFAULT_PAGE_SIZE, app_from_rest

__all__ = ("FETCH_MODES", "SparkHistoryBackend", "hs_date")

log = logging.getLogger(__name__)

_HS_DATE_FORMAT: Final = "%Y-%m-%dT%H:%M:%S"  # then ".<millis>GMT", as the server writes and parses its dates
_COPY_CHUNK: Final = 1 << 20
FETCH_MODES: Final = ("auto", "log", "rest")
# Answers of the logs endpoint that mean "no log from here" rather than "no such app": fall back to REST.
_NO_LOG_STATUSES: Final = frozenset({403, 404, 405, 410})
ZIP_MAX_RATIO: Final = 100.0
ZIP_MIN_BYTES: Final = 64 << 20  # below this, a small archive is never refused for its ratio


def hs_date(epoch_ms: int) -> str:
    """``1430917380950`` -> ``2015-05-06T13:03:00.950GMT``, the History Server's date parameter format."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=UTC)
    return f"{moment.strftime(_HS_DATE_FORMAT)}.{epoch_ms % 1000:03d}GMT"


@register
class SparkHistoryBackend(Backend):
    name = "spark-history"
    label = "Spark History Server"
    parameters = (
        Parameter("url", str, "History Server address, e.g. http://history.example.com:18080", required=True),
        REDACTION_PARAMETER,
        Parameter(
            "fetch_mode",
            str,
            "auto (the event log, else the REST views when the log cannot be downloaded), log or rest",
            default="auto",
        ),
        *HTTP_PARAMETERS,
    )
    # A download or its extracted content larger than this is refused; so is an archive with more members.
    max_log_bytes: ClassVar[int] = 64 * 2**30
    max_members: ClassVar[int] = 10_000
    # Extraction may write at most this many times the downloaded zip (and at least zip_min_bytes): event logs
    # deflate about 9x, a zip bomb of zeros about 1000x (see extract_zip).
    zip_max_ratio: ClassVar[float] = ZIP_MAX_RATIO
    zip_min_bytes: ClassVar[int] = ZIP_MIN_BYTES
    # REST path: tasks asked per taskList page, and at most this many tasks per app.
    rest_page_size: ClassVar[int] = DEFAULT_PAGE_SIZE
    rest_max_tasks: ClassVar[int] = DEFAULT_MAX_TASKS

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.policy = HttpPolicy.from_params(self.params)
        base = str(self.params["url"]).strip().rstrip("/").removesuffix("/api/v1")
        parts = urlsplit(base)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ParameterError(f"{self.name}.url: expected http(s)://host[:port], got {mask_url(base)!r}")
        self.base_url = base
        mode = str(self.params["fetch_mode"]).strip().lower()
        if mode not in FETCH_MODES:
            raise ParameterError(f"{self.name}.fetch_mode: expected one of {', '.join(FETCH_MODES)}, got {mode!r}")
        self.fetch_mode = mode
        self._session: requests.Session | None = None

    def describe(self) -> dict[str, Any]:
        shown = super().describe()
        shown["url"] = mask_url(str(shown["url"]))  # credentials may be written into the URL itself
        return shown

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            self._session = session_for(self.policy)
        return self._session

    def api_url(self, path: str) -> str:
        return f"{self.base_url}/api/v1/{path}"

    def app_url(self, app_id: str, attempt_id: str | None) -> str:
        """The app's page in the History Server UI (credentials in the configured URL masked)."""
        attempt = f"{quote(attempt_id, safe='')}/" if attempt_id else ""
        return mask_url(f"{self.base_url}/history/{quote(app_id, safe='')}/{attempt}")

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        """One ref per completed attempt that ended in [start_ms, end_ms), oldest first, and the earlier attempts of
        an app whose latest attempt did.

        The server leaves an app out of the completed list while its latest attempt runs, so an earlier attempt that
        ended in a window listed meanwhile is only seen when the app is done: it comes with the latest one. Listing
        an attempt twice is harmless (apps are recorded once).
        """
        answer = get_json(
            self.session,
            self.api_url("applications"),
            status="completed",
            minEndDate=hs_date(start_ms),
            maxEndDate=hs_date(end_ms),
        )
        if not isinstance(answer, list):
            raise BackendError(
                f"{mask_url(self.base_url)}: the application list is not a JSON list; is this a History Server?",
                permanent=True,
            )
        refs: list[AppRef] = []
        for app in answer:
            app_id = app.get("id") if isinstance(app, dict) else None
            if not isinstance(app_id, str) or not app_id:
                log.warning("%s: application list entry without an id, skipped", mask_url(self.base_url))
                continue
            attempts = [_attempt_ref(app_id, app, attempt) for attempt in app.get("attempts") or ()]
            completed = [ref for ref in attempts if ref is not None and ref.finished_ms is not None]
            latest_in_window = bool(completed) and start_ms <= max(r.finished_ms or 0 for r in completed) < end_ms
            refs.extend(
                ref
                for ref in completed
                if start_ms <= (ref.finished_ms or 0) < end_ms or (latest_in_window and (ref.finished_ms or 0) < end_ms)
            )
        refs.sort(key=lambda ref: (ref.finished_ms or 0, ref.app_id, ref.attempt_id or ""))
        return refs

    def fetch(self, ref: AppRef) -> SparkApp:
        """The attempt's model, from its event log or its REST views as ``fetch_mode`` says (see the module doc)."""
        source = self.app_url(ref.app_id, ref.attempt_id)
        if self.fetch_mode == "rest":
            return self._fetch_rest(ref, source, "fetch_mode is rest")
        try:
            return self._fetch_log(ref, source)
        except _LogUnavailable as unavailable:
            if self.fetch_mode == "log":
                raise BackendError(str(unavailable), permanent=True) from None
            log.info("%s: %s; reading the REST views instead", source, unavailable)
            try:
                return self._fetch_rest(ref, source, str(unavailable))
            except BackendError as error:
                raise BackendError(
                    f"{error} (the event log failed first: {unavailable})", permanent=error.permanent
                ) from None

    def _fetch_rest(self, ref: AppRef, source: str, reason: str) -> SparkApp:
        return app_from_rest(
            self.session,
            self.api_url("").rstrip("/"),
            ref.app_id,
            ref.attempt_id,
            redaction_patterns=self.params["redaction_patterns"],
            source=source,
            reason=reason,
            page_size=self.rest_page_size,
            max_tasks=self.rest_max_tasks,
        )

    def _fetch_log(self, ref: AppRef, source: str) -> SparkApp:
        """Downloads the attempt's event log (a zip) and reads it; temporary files are always removed.

        Raises _LogUnavailable when the server gives no usable log (the REST views may still serve), BackendError
        otherwise.
        """
        attempt = f"/{quote(ref.attempt_id, safe='')}" if ref.attempt_id else ""
        url = self.api_url(f"applications/{quote(ref.app_id, safe='')}{attempt}/logs")
        with tempfile.TemporaryDirectory(prefix="hindsight-hs-") as temp:
            archive = Path(temp) / "logs.zip"
            try:
                with archive.open("wb") as out:
                    download(self.session, url, out, max_bytes=self.max_log_bytes)
            except BackendError as error:
                if error.permanent and error.status in _NO_LOG_STATUSES:
                    raise _LogUnavailable(f"the logs endpoint refused: {error}") from None
                raise
            logs_dir = Path(temp) / "logs"
            logs_dir.mkdir()
            try:
                extract_zip(
                    archive,
                    logs_dir,
                    max_bytes=self.max_log_bytes,
                    max_members=self.max_members,
                    source=source,
                    max_ratio=self.zip_max_ratio,
                    min_bytes=self.zip_min_bytes,
                )
                archive.unlink()  # free the disk before reading
                return _read_attempt(logs_dir, ref, source, self.params["redaction_patterns"])
            except BackendError as error:
                if error.permanent:
                    raise _LogUnavailable(str(error)) from None
                raise


class _LogUnavailable(BackendError):
    """The server gave no usable event log for an attempt: refused, missing, not an archive, or unreadable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


def _attempt_ref(app_id: str, app: Mapping[str, Any], attempt: Any) -> AppRef | None:
    """The ref of one completed attempt of the list, None for a running or malformed one."""
    if not isinstance(attempt, dict) or attempt.get("completed") is not True:
        return None
    finished_ms = _end_ms(attempt)
    if finished_ms is None:
        return None
    attempt_id = attempt.get("attemptId")
    return AppRef(
        app_id=app_id,
        attempt_id=str(attempt_id) if attempt_id not in (None, "") else None,
        finished_ms=finished_ms,
        name=str(app.get("name") or ""),
        user=str(attempt.get("sparkUser") or ""),
    )


def _end_ms(attempt: Mapping[str, Any]) -> int | None:
    """The attempt's end: ``endTimeEpoch`` (Spark 2.0+), else the ``endTime`` text; None when not ended."""
    epoch = attempt.get("endTimeEpoch")
    if isinstance(epoch, int) and not isinstance(epoch, bool):
        return epoch if epoch > 0 else None
    text = attempt.get("endTime")
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.strptime(text.removesuffix("GMT"), f"{_HS_DATE_FORMAT}.%f").replace(tzinfo=UTC)
    except ValueError:
        return None
    epoch_ms = int(moment.timestamp() * 1000)
    return epoch_ms if epoch_ms > 0 else None


def extract_zip(
    archive: Path,
    dest: Path,
    *,
    max_bytes: int,
    max_members: int,
    source: str,
    max_ratio: float = ZIP_MAX_RATIO,
    min_bytes: int = ZIP_MIN_BYTES,
) -> int:
    """Extracts ``archive`` into the empty directory ``dest``, refusing names that leave it, links, and oversized
    content; returns the bytes written.

    The budget is near the log's expected size: ``max_ratio`` times the archive's own size (at least ``min_bytes``),
    never more than ``max_bytes``. An archive whose members declare more is refused before anything is written;
    since declared sizes may lie, bytes are also counted as they are written, against the budget and against each
    member's declared size. On any refusal what was written is removed. Raises BackendError: permanent for a bad
    or hostile archive, transient when the local disk fails.
    """
    root = dest.resolve()
    written = 0
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > max_members:
                raise BackendError(f"{source}: log archive has {len(members)} members; refused", permanent=True)
            compressed = archive.stat().st_size
            limit = min(max_bytes, max(min_bytes, int(compressed * max_ratio)))
            declared = sum(member.file_size for member in members)
            if declared > limit:
                raise BackendError(
                    f"{source}: log archive expands beyond {limit} bytes ({declared} declared from {compressed} "
                    f"compressed; the budget is {max_ratio:g}x the download, at most {max_bytes}); refused",
                    permanent=True,
                )
            for member in members:
                target = _member_target(root, member.filename, source)
                if stat.S_ISLNK(member.external_attr >> 16):
                    message = f"{source}: log archive holds a link {member.filename[:200]!r}; refused"
                    raise BackendError(message, permanent=True)
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                written += _extract_member(zipped, member, target, limit - written, source)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
        # RuntimeError: encrypted member; NotImplementedError: unknown compression method
        _empty(dest)
        raise BackendError(f"{source}: the downloaded log is not a usable zip ({error})", permanent=True) from None
    except FileExistsError:
        _empty(dest)
        raise BackendError(f"{source}: log archive names a file twice; refused", permanent=True) from None
    except BackendError:
        _empty(dest)
        raise
    except OSError as error:
        _empty(dest)
        if error.errno == errno.ENAMETOOLONG:  # the archive names a path no file system takes: no retry helps
            raise BackendError(
                f"{source}: log archive names a path too long to write; refused", permanent=True
            ) from None
        raise BackendError(f"{source}: cannot extract the log locally ({error.strerror or error})") from None
    return written


def _extract_member(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, budget: int, source: str) -> int:
    """Copies one member to ``target``, counting what is written; BackendError past ``budget`` or its declared size."""
    written = 0
    with zipped.open(member) as src, target.open("xb") as out:
        while chunk := _read_member(src, member, source):
            written += len(chunk)
            if written > budget:
                raise BackendError(f"{source}: log archive expands beyond its budget; refused", permanent=True)
            if written > member.file_size:
                message = f"{source}: log archive member {member.filename[:200]!r} is larger than it declares; refused"
                raise BackendError(message, permanent=True)
            out.write(chunk)
    return written


def _read_member(src: IO[bytes], member: zipfile.ZipInfo, source: str) -> bytes:
    """The next chunk of a member's data. bzip2 and lzma say "this data does not decompress" with OSError and
    LZMAError, which must not pass for a local disk failure (a transient error, so the same archive would be
    fetched again on every poll): the archive is refused for good."""
    try:
        return src.read(_COPY_CHUNK)
    except (OSError, lzma.LZMAError) as error:
        message = f"{source}: log archive member {member.filename[:200]!r} does not decompress ({error}); refused"
        raise BackendError(message, permanent=True) from None


def _empty(directory: Path) -> None:
    """Removes what a refused extraction wrote: a zip bomb's output must not wait for the caller's clean-up."""
    with contextlib.suppress(OSError):
        for child in directory.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)


def _member_target(root: Path, name: str, source: str) -> Path:
    """Where member ``name`` goes under ``root``; BackendError for a name that would leave it."""
    member = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\0" in name
        or member.is_absolute()
        or any(part in {"..", ""} or ":" in part for part in member.parts)
    ):
        raise BackendError(f"{source}: log archive member name {name[:200]!r} is unsafe; refused", permanent=True)
    target = root.joinpath(*member.parts)
    if not target.resolve().is_relative_to(root):
        raise BackendError(f"{source}: log archive member {name[:200]!r} leaves its directory; refused", permanent=True)
    return target


def _read_attempt(logs_dir: Path, ref: AppRef, source: str, redaction_patterns: list[str]) -> SparkApp:
    """The app of ``ref`` from the extracted logs; BackendError if still in progress, unreadable or absent."""
    where = f"{source} ({ref.app_id}{f' attempt {ref.attempt_id}' if ref.attempt_id else ''})"
    try:
        logs, _ = find_event_logs(logs_dir)
    except EventLogError as error:
        message = f"{where}: no event log in the download ({_local(error, logs_dir)})"
        raise BackendError(message, permanent=True) from None
    if any(found.in_progress for found in logs):
        raise BackendError(f"{where}: the event log is still in progress; it is fetched once complete")
    apps: list[SparkApp] = []
    errors: list[str] = []
    for outcome in read_apps(logs_dir, redaction_patterns):
        if outcome.app is not None:
            apps.append(outcome.app)
        elif outcome.over_budget:  # another download and read would take as long again: failed at once
            raise BackendError(f"{where}: {_local(outcome.error or 'over its read budget', logs_dir)}", permanent=True)
        elif outcome.error:
            errors.append(_local(outcome.error, logs_dir))
    matching = [app for app in apps if app.app_id == ref.app_id and app.attempt_id == ref.attempt_id]
    if not matching and len(apps) == 1:
        matching = apps  # the server chose the log by this id: trust it over ids missing from old logs
    if not matching:
        detail = errors[0] if errors else f"the logs hold {', '.join(_label(app) for app in apps) or 'no app'}"
        raise BackendError(f"{where}: cannot read the event log ({detail})", permanent=True)
    app = matching[0]
    app.source = source
    app.warnings[:] = [_local(warning, logs_dir) for warning in app.warnings]
    return app


def _local(message: object, logs_dir: Path) -> str:
    """A message without the temporary directory, which is gone once the fetch returns."""
    return str(message).replace(f"{logs_dir}/", "").replace(str(logs_dir), "")


def _label(app: SparkApp) -> str:
    return f"{app.app_id} attempt {app.attempt_id}" if app.attempt_id else app.app_id
