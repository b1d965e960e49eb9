"""A small WebHDFS client: list directories and read files of HDFS over the NameNode's REST API.

Only what reading event logs needs: ``LISTSTATUS`` (paged with ``LISTSTATUS_BATCH`` where the server has it),
``GETFILESTATUS`` and ``OPEN`` (the NameNode answers 307 to a DataNode, which requests follows). Requests go
through the one HTTP policy of ``fetchers.http`` (timeouts, retries, TLS, basic / bearer / SPNEGO); simple
authentication adds ``user.name``. With several NameNode addresses (HA), a standby or unreachable one is passed
over for the next.

Only regular files (``FILE``) and directories are listed: a ``SYMLINK`` entry is reported and never followed (HDFS
symlinks are off by default, may loop, and may point outside the configured directory), and any other type is
skipped; the directory walk and its depth cap are the caller's (``fetchers.eventlog_dir``). A directory listing
stops after ``max_entries`` entries (in name order, reported), and a JSON answer larger than
:data:`MAX_ANSWER_BYTES` is refused, so neither a huge directory nor a hostile server costs unbounded memory.

Every failure is a ``BackendError``: a ``RemoteException`` answer gives its exception and message.
``FileNotFoundException`` is ``NotFound`` (permanent: the caller decides what a missing path means),
``AccessControlException`` and other refusals (401, 403, 4xx) are permanent, 5xx, timeouts and a standby
NameNode are transient. Reference: Hadoop's "WebHDFS REST API" document.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final
from urllib.parse import quote, urlsplit

import requests

from fetchers.backends import BackendError, ParameterError
from fetchers.http import HttpPolicy, copy_body, mask_url, session_for

__all__ = ("FileStatus", "NotFound", "RemoteError", "WebHdfsClient", "WebHdfsLocation", "parse_location")

WEBHDFS_SCHEMES: Final = {"webhdfs": "http", "swebhdfs": "https"}
PREFIX: Final = "/webhdfs/v1"
# Exceptions a NameNode raises when another one should be asked (HA standby, observer) or later.
_STANDBY: Final = frozenset({"StandbyException", "ObserverRetryOnActiveException"})
_RETRIABLE: Final = frozenset({"RetriableException", "SafeModeException", "IOException"})
# Answers of a server without LISTSTATUS_BATCH (Hadoop before 2.8, some gateways): list in one go instead.
_NO_BATCH: Final = frozenset({"IllegalArgumentException", "UnsupportedOperationException"})
_MAX_PAGES: Final = 100_000  # a server repeating a page would otherwise be listed for ever
MAX_LISTING_ENTRIES: Final = 100_000  # entries kept of one directory listing; the rest are reported, not listed
MAX_ANSWER_BYTES: Final = 64 << 20  # a JSON answer (LISTSTATUS of 100,000 entries is about 35 MB)


class RemoteError(BackendError):
    """An unsuccessful answer: its HTTP status and the RemoteException's name ("" when the body had none)."""

    def __init__(self, message: str, *, permanent: bool, status: int, exception: str) -> None:
        super().__init__(message, permanent=permanent)
        self.status = status
        self.exception = exception


class NotFound(RemoteError):
    """The path does not exist (``FileNotFoundException``)."""

    def __init__(self, message: str, *, status: int = 404) -> None:
        super().__init__(message, permanent=True, status=status, exception="FileNotFoundException")


@dataclass(frozen=True)
class FileStatus:
    name: str  # pathSuffix: the entry's name ("" for the status of a path itself)
    is_dir: bool
    length: int
    mtime_ms: int


@dataclass(frozen=True)
class WebHdfsLocation:
    """Where a configured path lives: NameNode base URLs (HA: several), the HDFS path, the path as written."""

    base_urls: tuple[str, ...]
    path: str  # absolute, normalized, no trailing "/"
    display: str  # as configured, without a trailing "/": the prefix of every listed log's location


def parse_location(given: str, webhdfs_urls: Sequence[str]) -> WebHdfsLocation:
    """``webhdfs://host:port/path`` (http), ``swebhdfs://...`` (https), or ``hdfs://any/path`` with
    ``webhdfs_urls`` naming the NameNodes' HTTP(S) addresses; ParameterError otherwise."""
    try:
        parts = urlsplit(given.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ParameterError(f"eventlog-dir.paths: {mask_url(given)!r} is not a valid URL") from None
    scheme = parts.scheme.lower()
    if "@" in parts.netloc:
        raise ParameterError("eventlog-dir.paths: credentials in a path are refused; use the auth parameters")
    if parts.query or parts.fragment:
        raise ParameterError(f"eventlog-dir.paths: {given!r}: no query or fragment expected")
    path = normalize_path(parts.path or "/")
    display = given.strip().rstrip("/") or given.strip()
    if scheme in WEBHDFS_SCHEMES:
        if not parts.hostname:
            raise ParameterError(f"eventlog-dir.paths: {given!r}: the NameNode's host[:port] is missing")
        return WebHdfsLocation((f"{WEBHDFS_SCHEMES[scheme]}://{parts.netloc}",), path, display)
    if scheme == "hdfs":
        if not webhdfs_urls:
            raise ParameterError(
                f"eventlog-dir.paths: {given!r}: hdfs:// is read over WebHDFS; set webhdfs_url to the NameNode's "
                "HTTP address (e.g. http://namenode:9870), or write the path as webhdfs://namenode:9870/..."
            )
        bases: list[str] = []
        for url in webhdfs_urls:
            base = url.strip().rstrip("/").removesuffix(PREFIX)
            try:
                split = urlsplit(base)
                split.port  # noqa: B018
            except ValueError:
                raise ParameterError(f"eventlog-dir.webhdfs_url: {mask_url(url)!r} is not a valid URL") from None
            if split.scheme not in {"http", "https"} or not split.hostname or "@" in split.netloc or split.path:
                raise ParameterError(f"eventlog-dir.webhdfs_url: expected http(s)://host:port, got {mask_url(url)!r}")
            bases.append(base)
        return WebHdfsLocation(tuple(bases), path, display)
    raise ParameterError(f"eventlog-dir.paths: {given!r}: {scheme}:// is not readable over WebHDFS")


def normalize_path(path: str) -> str:
    """An absolute HDFS path without empty, "." or trailing segments; ParameterError for ".." segments."""
    segments = [segment for segment in path.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise ParameterError(f"eventlog-dir.paths: {path!r}: '..' is not allowed in an HDFS path")
    return "/" + "/".join(segments)


class WebHdfsClient:
    """Requests to one HDFS (one or several NameNode addresses) under one HTTP policy."""

    def __init__(
        self,
        base_urls: Sequence[str],
        policy: HttpPolicy,
        *,
        user: str | None = None,
        report: Callable[[str], None] | None = None,
        max_entries: int | None = None,
    ) -> None:
        self.base_urls = tuple(base_urls)
        self.policy = policy
        self.user = user
        self.report = report or (lambda _problem: None)  # entries left out: symbolic links, a listing cut short
        self.max_entries = MAX_LISTING_ENTRIES if max_entries is None else max_entries
        self._active = 0  # the NameNode that answered last: asked first next time
        self._batch: bool | None = None  # LISTSTATUS_BATCH support, unknown until tried
        self._session: requests.Session | None = None

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            self._session = session_for(self.policy)
        return self._session

    def where(self, path: str) -> str:
        """How a path is named in messages: the NameNode that answers and the path."""
        return f"{mask_url(self.base_urls[self._active])}{path}"

    def list_status(self, path: str) -> list[FileStatus]:
        """The files and directories in a directory (or the one status of a file, named ""), in the server's order,
        at most ``max_entries`` of them (the cut is reported)."""
        if self._batch is not False:
            try:
                entries = self._list_batched(path)
            except _BatchUnsupported:
                self._batch = False
            else:
                self._batch = True
                return entries
        answer = self._json(path, "LISTSTATUS")
        entries = self._statuses(_dig(answer, "FileStatuses", "FileStatus"), path)
        if len(entries) > self.max_entries:
            self._report_cut(path)
            del entries[self.max_entries :]
        return entries

    def file_status(self, path: str) -> FileStatus:
        """The status of a file or directory; permanent BackendError for anything else (a symbolic link)."""
        answer = self._json(path, "GETFILESTATUS")
        statuses = self._statuses([_dig(answer, "FileStatus")], path)
        if not statuses:
            raise BackendError(f"{self.where(path)}: not a regular file or a directory; not read", permanent=True)
        return statuses[0]

    def read_head(self, path: str, length: int) -> bytes:
        """The first ``length`` bytes of a file (fewer if it is shorter)."""
        with self._request(path, "OPEN", {"offset": 0, "length": length}, stream=True) as response:
            try:
                return bytes(response.raw.read(length, decode_content=True) or b"")
            except (requests.RequestException, OSError) as error:
                raise BackendError(f"{self.where(path)}: read broke off ({type(error).__name__})") from None

    def download(self, path: str, dest: IO[bytes], *, max_bytes: int) -> int:
        """Streams a file into ``dest``; the bytes written. Permanent BackendError beyond ``max_bytes``."""
        with self._request(path, "OPEN", {}, stream=True) as response:
            return copy_body(
                response, dest, max_bytes=max_bytes, where=self.where(path), reason=lambda error: type(error).__name__
            )

    def _list_batched(self, path: str) -> list[FileStatus]:
        entries: list[FileStatus] = []
        after: str | None = None
        for _ in range(_MAX_PAGES):
            query = {} if after is None else {"startAfter": after}
            try:
                answer = self._json(path, "LISTSTATUS_BATCH", query)
            except RemoteError as error:
                if self._batch is None and (error.exception in _NO_BATCH or error.status in (400, 501)):
                    raise _BatchUnsupported from None
                raise
            listing = _dig(answer, "DirectoryListing")
            raw = _dig(listing, "partialListing", "FileStatuses", "FileStatus")
            page = self._statuses(raw, path)
            remaining = listing.get("remainingEntries") if isinstance(listing, dict) else None
            if not isinstance(remaining, int) or isinstance(remaining, bool):
                raise BackendError(f"{self.where(path)}: LISTSTATUS_BATCH answer without remainingEntries")
            entries.extend(page)
            if len(entries) > self.max_entries or (len(entries) == self.max_entries and remaining > 0):
                self._report_cut(path)
                return entries[: self.max_entries]
            if remaining <= 0 or not raw:
                return entries
            # the next page starts after the last name the server gave, links and malformed entries included
            last = raw[-1].get("pathSuffix") if isinstance(raw[-1], dict) else None
            if not isinstance(last, str) or last == after:
                raise BackendError(f"{self.where(path)}: LISTSTATUS_BATCH does not advance past {after!r}")
            after = last
        raise BackendError(f"{self.where(path)}: more than {_MAX_PAGES} LISTSTATUS_BATCH pages; refused")

    def _statuses(self, raw: Any, path: str) -> list[FileStatus]:
        """The files and directories of an answer; symbolic links reported, malformed entries left out."""
        where = self.where(path)
        statuses = _statuses(raw, where)
        for entry in raw:
            if isinstance(entry, dict) and entry.get("type") == "SYMLINK":
                name = str(entry.get("pathSuffix") or "")[:200]
                self.report(f"{where.rstrip('/')}{'/' + name if name else ''}: a symbolic link; not followed")
        return statuses

    def _report_cut(self, path: str) -> None:
        self.report(
            f"{self.where(path)}: more than {self.max_entries} entries; only the first {self.max_entries} listed"
        )

    def _json(self, path: str, op: str, query: Mapping[str, Any] | None = None) -> Any:
        with self._request(path, op, query or {}, stream=True) as response:
            body = io.BytesIO()
            copy_body(
                response,
                body,
                max_bytes=MAX_ANSWER_BYTES,
                where=f"{self.where(path)}: {op}",
                reason=lambda error: type(error).__name__,
            )
            try:
                return json.loads(body.getvalue())
            except (ValueError, RecursionError):
                raise BackendError(
                    f"{self.where(path)}: {op}: the answer is not JSON "
                    f"({response.headers.get('Content-Type', 'no content type')}); is this a WebHDFS address?",
                    permanent=True,
                ) from None

    def _request(self, path: str, op: str, query: Mapping[str, Any], *, stream: bool) -> requests.Response:
        """The 2xx answer to ``op`` on ``path``, from the first NameNode that is active; BackendError otherwise."""
        params: dict[str, Any] = {"op": op, **query}
        if self.user:
            params["user.name"] = self.user
        problems: list[str] = []
        order = [self._active, *(i for i in range(len(self.base_urls)) if i != self._active)]
        for position, index in enumerate(order):
            base = self.base_urls[index]
            url = f"{base}{PREFIX}{quote(path, safe='/')}"
            where = f"{mask_url(base)}{path}: {op}"
            last = position == len(order) - 1
            try:
                response = self.session.get(url, params=params, stream=stream, allow_redirects=True)
            except requests.exceptions.SSLError as error:
                raise BackendError(f"{where}: TLS failed ({self._reason(error)})", permanent=True) from None
            except requests.RequestException as error:
                problems.append(f"{mask_url(base)}: {self._reason(error)}")
                if last:
                    failed = "timed out" if isinstance(error, requests.exceptions.Timeout) else "cannot connect"
                    raise BackendError(f"{where}: {failed} ({'; '.join(problems)})") from None
                continue
            if response.ok:
                self._active = index
                return response
            remote = _remote_error(response, where, self._redact, streamed=stream)
            if remote.exception in _STANDBY and not last:
                problems.append(f"{mask_url(base)}: {remote.exception}")
                continue
            self._active = index
            raise remote
        raise BackendError(f"{path}: no NameNode address configured", permanent=True)  # pragma: no cover

    def _reason(self, error: Exception) -> str:
        cause: BaseException = error
        for _ in range(10):  # the innermost cause says what happened (refused, name not resolved, ...)
            inner = getattr(cause, "reason", None) or cause.__cause__ or cause.__context__
            if not isinstance(inner, BaseException) or inner is cause:
                break
            cause = inner
        return self._redact(f"{type(cause).__name__}: {' '.join(str(cause).split())}"[:300])

    def _redact(self, text: str) -> str:
        for secret in self.policy.secrets():
            text = text.replace(secret, "********")
        return text


class _BatchUnsupported(Exception):
    pass


def _remote_error(
    response: requests.Response, where: str, redact: Callable[[str], str], *, streamed: bool
) -> RemoteError:
    """The error an unsuccessful answer stands for; reads (at most 4 kB of) its body and closes it."""
    status = response.status_code
    try:
        body = bytes(response.raw.read(4096, decode_content=True) or b"") if streamed else response.content[:4096]
    except (requests.RequestException, OSError, ValueError):
        body = b""  # the body only decorates the message
    finally:
        response.close()
    exception, message = _remote_exception(body)
    if exception:
        detail = f"{exception}: {message}" if message else exception
    else:
        detail = f"HTTP {status} {response.reason or ''}".rstrip()
        text = " ".join(body[:200].decode("utf-8", "replace").split())
        if text:
            detail += f": {text}"
    text = f"{where}: {redact(detail)}"
    if exception == "FileNotFoundException" or (not exception and status == 404):
        return NotFound(text, status=status)
    if exception in _STANDBY or exception in _RETRIABLE:
        permanent = False
    else:
        permanent = 400 <= status < 500 and status not in (408, 429)
    return RemoteError(text, permanent=permanent, status=status, exception=exception)


def _remote_exception(body: bytes) -> tuple[str, str]:
    """(exception, message) of a ``{"RemoteException": {...}}`` body; ("", "") for any other body."""
    with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
        document = json.loads(body)
        remote = document.get("RemoteException") if isinstance(document, dict) else None
        if isinstance(remote, dict):
            exception = remote.get("exception") or str(remote.get("javaClassName") or "").rpartition(".")[2]
            message = remote.get("message")
            return (
                " ".join(str(exception or "RemoteException").split())[:100],
                " ".join(str(message).split())[:300] if message else "",
            )
    return "", ""


def _dig(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict) or key not in document:
            raise BackendError(f"WebHDFS answer without {'.'.join(keys)}: is this a WebHDFS address?", permanent=True)
        document = document[key]
    return document


def _statuses(raw: Any, where: str) -> list[FileStatus]:
    """FileStatus entries of an answer; malformed ones are left out (an answer that is no list is an error)."""
    if not isinstance(raw, list):
        raise BackendError(f"{where}: WebHDFS answer with a FileStatus that is not a list", permanent=True)
    return list(_valid_statuses(raw))


def _valid_statuses(raw: list[Any]) -> Iterator[FileStatus]:
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        name, kind = entry.get("pathSuffix"), entry.get("type")
        length, mtime = entry.get("length", 0), entry.get("modificationTime")
        # A name becomes a local file name on fetch: nothing that could leave the temporary directory.
        if not isinstance(name, str) or "/" in name or "\x00" in name or name in (".", ".."):
            continue
        if kind not in ("FILE", "DIRECTORY", "SYMLINK"):
            continue
        if not isinstance(length, int) or not isinstance(mtime, int) or isinstance(length, bool):
            continue
        if isinstance(mtime, bool) or length < 0 or mtime < 0:
            continue
        if kind == "SYMLINK":  # HDFS symlinks are rare and may loop: not followed, like linked directories locally
            continue
        yield FileStatus(name=name, is_dir=kind == "DIRECTORY", length=length, mtime_ms=mtime)
