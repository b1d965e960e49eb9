"""A STUB of HDFS's WebHDFS REST API, for tests: no NameNode or DataNode can run here.

It is NOT HDFS. It serves a local directory tree as if it were HDFS, in the JSON shapes of Hadoop's "WebHDFS REST
API" document, on 127.0.0.1 and free ports, in background threads:

* the "NameNode" answers ``GET /webhdfs/v1/<path>?op=...``:

  - ``LISTSTATUS``: ``{"FileStatuses": {"FileStatus": [...]}}``, entries sorted by name, each with
    ``pathSuffix``, ``type`` (FILE / DIRECTORY, SYMLINK with its ``symlink`` target for a local symbolic link, as
    HDFS lists a link without resolving it), ``length``, ``modificationTime`` (the local mtime, ms) and the
    other documented keys; a file gives its own status with an empty ``pathSuffix``;
  - ``LISTSTATUS_BATCH`` (``startAfter``): ``{"DirectoryListing": {"partialListing": {"FileStatuses": ...},
    "remainingEntries": N}}``, ``batch_size`` entries a page; with ``batch_supported = False`` it answers 400
    ``IllegalArgumentException`` like a NameNode older than Hadoop 2.8;
  - ``GETFILESTATUS``: ``{"FileStatus": {...}}``;
  - ``OPEN``: 307 with a ``Location`` on the "DataNode" port carrying the query on (as the NameNode does), and
    the DataNode streams the bytes (``offset``, ``length``);

* a missing path is 404 ``FileNotFoundException``; paths in ``denied`` are 403 ``AccessControlException``;
  ``standby = True`` makes every answer 403 ``StandbyException``; ``faults`` maps an op to a (status, body)
  answered instead (a raw body string, e.g. malformed JSON, or a dict sent as JSON);
* ``requests`` records (server, path, query, headers) of every request, DataNode ones included.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

PREFIX = "/webhdfs/v1"


def remote_exception(exception: str, message: str, java_package: str = "java.io") -> dict[str, Any]:
    """The documented error body."""
    return {
        "RemoteException": {
            "exception": exception,
            "javaClassName": f"{java_package}.{exception}",
            "message": message,
        }
    }


class WebHdfsStub:
    """One stub NameNode plus its DataNode over ``root``; use as a context manager or call ``stop()``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.batch_size = 1000
        self.batch_supported = True
        self.standby = False
        self.denied: set[str] = set()  # HDFS paths answered with AccessControlException
        self.faults: dict[str, tuple[int, Any]] = {}  # op -> (status, body) answered instead
        self.requests: list[tuple[str, str, dict[str, list[str]], dict[str, str]]] = []
        self._lock = threading.Lock()
        self._namenode = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self, "namenode"))
        self._datanode = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self, "datanode"))
        self.port = self._namenode.server_address[1]
        self.datanode_port = self._datanode.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._threads = [
            threading.Thread(target=server.serve_forever, args=(0.05,), name="webhdfs-stub", daemon=True)
            for server in (self._namenode, self._datanode)
        ]
        for thread in self._threads:
            thread.start()

    def webhdfs(self, path: str) -> str:
        """``webhdfs://127.0.0.1:<port><path>``: how a backend is configured to read ``path`` here."""
        return f"webhdfs://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        for server in (self._namenode, self._datanode):
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> WebHdfsStub:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._threads[0].is_alive():
            self.stop()

    def ops(self) -> list[str]:
        """The ``op`` of every NameNode request so far, in order."""
        return [query.get("op", [""])[0] for server, _, query, _ in self.requests if server == "namenode"]

    # Answers

    def answer(self, server: str, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> _Answer:
        with self._lock:
            self.requests.append((server, path, query, headers))
        if not path.startswith(PREFIX):
            return _json(404, remote_exception("FileNotFoundException", f"no such resource {path}"))
        hdfs_path = "/" + unquote(path[len(PREFIX) :]).strip("/")
        op = query.get("op", [""])[0].upper()
        if server == "datanode":
            return self._read(hdfs_path, query)
        if self.standby:
            message = "Operation category READ is not supported in state standby"
            return _json(403, remote_exception("StandbyException", message, "org.apache.hadoop.ipc"))
        if op in self.faults:
            status, body = self.faults[op]
            return _json(status, body) if not isinstance(body, str) else _Answer(status, "application/json", body)
        if any(hdfs_path == d or hdfs_path.startswith(d.rstrip("/") + "/") for d in self.denied):
            message = f'Permission denied: user=dr.who, access=READ_EXECUTE, inode="{hdfs_path}"'
            return _json(403, remote_exception("AccessControlException", message, "org.apache.hadoop.security"))
        local = self._local(hdfs_path)
        if local is None or not local.exists():
            return _json(404, remote_exception("FileNotFoundException", f"File does not exist: {hdfs_path}"))
        if op == "GETFILESTATUS":
            return _json(200, {"FileStatus": _status(local, "")})
        if op == "LISTSTATUS":
            return _json(200, {"FileStatuses": {"FileStatus": self._children(local)}})
        if op == "LISTSTATUS_BATCH":
            if not self.batch_supported:
                message = 'Invalid value for webhdfs parameter "op": No enum constant ...GetOpParam.Op.LISTSTATUS_BATCH'
                return _json(400, remote_exception("IllegalArgumentException", message, "java.lang"))
            after = query.get("startAfter", [""])[0]
            entries = [e for e in self._children(local) if local.is_file() or e["pathSuffix"] > after]
            page = entries[: self.batch_size]
            remaining = len(entries) - len(page)
            listing = {"partialListing": {"FileStatuses": {"FileStatus": page}}, "remainingEntries": remaining}
            return _json(200, {"DirectoryListing": listing})
        if op == "OPEN":
            if local.is_dir():
                return _json(404, remote_exception("FileNotFoundException", f"Path is not a file: {hdfs_path}"))
            carried = {key: values[0] for key, values in query.items()}
            carried.update(namenoderpcaddress="127.0.0.1:8020", offset=carried.get("offset", "0"))
            location = f"http://127.0.0.1:{self.datanode_port}{PREFIX}{quote(hdfs_path)}?{urlencode(carried)}"
            return _Answer(307, "application/octet-stream", b"", {"Location": location})
        message = f'Invalid value for webhdfs parameter "op": {op}'
        return _json(400, remote_exception("IllegalArgumentException", message, "java.lang"))

    def _read(self, hdfs_path: str, query: dict[str, list[str]]) -> _Answer:
        local = self._local(hdfs_path)
        if local is None or not local.is_file():
            return _json(404, remote_exception("FileNotFoundException", f"File does not exist: {hdfs_path}"))
        offset = int(query.get("offset", ["0"])[0])
        length = query.get("length")
        with local.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(int(length[0])) if length else fh.read()
        return _Answer(200, "application/octet-stream", data)

    def _local(self, hdfs_path: str) -> Path | None:
        local = (self.root / hdfs_path.lstrip("/")).resolve()
        return local if local.is_relative_to(self.root.resolve()) else None

    def _children(self, local: Path) -> list[dict[str, Any]]:
        if local.is_file():
            return [_status(local, "")]
        return [_status(entry, entry.name) for entry in sorted(local.iterdir())]


class _Answer:
    def __init__(self, status: int, content_type: str, body: bytes | str, headers: dict[str, str] | None = None):
        self.status = status
        self.content_type = content_type
        self.body = body.encode() if isinstance(body, str) else body
        self.headers = headers or {}


def _json(status: int, document: Any) -> _Answer:
    return _Answer(status, "application/json", json.dumps(document))


def _status(path: Path, suffix: str) -> dict[str, Any]:
    """A documented FileStatus object for a local file, directory or (listed, not resolved) symbolic link."""
    if suffix and path.is_symlink():
        mtime_ms = path.lstat().st_mtime_ns // 1_000_000
        return {
            "accessTime": mtime_ms,
            "blockSize": 0,
            "childrenNum": 0,
            "fileId": path.lstat().st_ino,
            "group": "supergroup",
            "length": 0,
            "modificationTime": mtime_ms,
            "owner": "spark",
            "pathSuffix": suffix,
            "permission": "777",
            "replication": 0,
            "storagePolicy": 0,
            "symlink": str(path.readlink()),
            "type": "SYMLINK",
        }
    info = path.stat()
    is_dir = path.is_dir()
    mtime_ms = info.st_mtime_ns // 1_000_000
    return {
        "accessTime": 0 if is_dir else mtime_ms,
        "blockSize": 0 if is_dir else 134217728,
        "childrenNum": len(list(path.iterdir())) if is_dir else 0,
        "fileId": info.st_ino,
        "group": "supergroup",
        "length": 0 if is_dir else info.st_size,
        "modificationTime": mtime_ms,
        "owner": "spark",
        "pathSuffix": suffix,
        "permission": "770" if is_dir else "660",
        "replication": 0 if is_dir else 3,
        "storagePolicy": 0,
        "type": "DIRECTORY" if is_dir else "FILE",
    }


def _handler_for(stub: WebHdfsStub, server: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            answer = stub.answer(server, parts.path, parse_qs(parts.query), dict(self.headers.items()))
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, fmt: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def webhdfs_stubs(root: Path, count: int) -> Iterator[list[WebHdfsStub]]:
    """Several stub NameNodes over the same tree (an HA pair), stopped at the end."""
    stubs = [WebHdfsStub(root) for _ in range(count)]
    try:
        yield stubs
    finally:
        for stub in stubs:
            stub.__exit__()
