"""A fault-injecting HTTP proxy for tests: a share of answers are 500/503, too slow, or have their body corrupted.

It sits in front of a real server (the Spark History Server) on 127.0.0.1 and a free port, one thread per
request, forwarding GETs. Which request gets which fault is drawn from a seeded random generator, so a run with
the same seed and the same requests injects the same faults. ``stop()`` closes its port (clients then get
"connection refused") and ``start()`` opens the same port again.

    with FaultProxy("http://127.0.0.1:18080", seed=7, error_share=0.3, slow_share=0.1, slow_s=3) as proxy:
        ...  # point the client at proxy.url; proxy.counts says what it did
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

CHUNK = 1 << 16


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FaultProxy:
    """Forwards GETs to ``upstream``; ``error_share`` of them answered 500 or 503, ``slow_share`` held ``slow_s``.

    ``faulty(path)`` limits the random faults to some paths (all by default); ``corrupt(path)`` says which
    answers have their body replaced by bytes of the same length that are no zip and no JSON. Shares and rules
    may be changed while it runs. ``counts`` tallies requests, errors, slow and corrupted answers.
    """

    def __init__(
        self,
        upstream: str,
        *,
        seed: int = 0,
        error_share: float = 0.0,
        slow_share: float = 0.0,
        slow_s: float = 5.0,
        faulty: Callable[[str], bool] | None = None,
        corrupt: Callable[[str], bool] | None = None,
        port: int | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self.error_share = error_share
        self.slow_share = slow_share
        self.slow_s = slow_s
        self.faulty = faulty or (lambda path: True)
        self.corrupt = corrupt or (lambda path: False)
        self.port = port or free_port()
        self.counts: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()  # wakes slow answers when the proxy stops

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Listens on the proxy's port (the same one after a ``stop``)."""
        if self._server is not None:
            return
        self._stopped.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Closes the port: new connections are refused until ``start``; answers being held are dropped."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopped.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _draw(self, path: str) -> str:
        """The fault for one request: "error", "slow" or "" (forward it), drawn in request order."""
        with self._lock:
            self.counts["requests"] += 1
            draw = self._random.random()
            status_draw = self._random.random()
            if not self.faulty(path):
                return ""
            if draw < self.error_share:
                self.counts["errors"] += 1
                return "error-500" if status_draw < 0.5 else "error-503"
            if draw < self.error_share + self.slow_share:
                self.counts["slow"] += 1
                return "slow"
            return ""


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so a stopped proxy refuses the client's next request at once.
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            fault = proxy._draw(self.path)
            try:
                if fault.startswith("error-"):
                    self._answer(int(fault.removeprefix("error-")), b"injected fault\n")
                    return
                if fault == "slow" and proxy._stopped.wait(proxy.slow_s):
                    return  # stopped meanwhile: drop the connection
                self._forward()
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                pass  # the client gave up (its timeout): nothing to answer

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _forward(self) -> None:
            upstream = http.client.HTTPConnection(*proxy.upstream, timeout=120)
            answering = False
            try:
                upstream.request("GET", self.path, headers={"Accept": self.headers.get("Accept", "*/*")})
                response = upstream.getresponse()
                if proxy.corrupt(self.path) and response.status == 200:
                    body = response.read()
                    with proxy._lock:
                        proxy.counts["corrupted"] += 1
                    garbage = (b"this is no zip and no JSON " * (len(body) // 27 + 1))[: len(body)]
                    self._answer(200, garbage, response.getheader("Content-Type") or "application/octet-stream")
                    return
                answering = True
                self.send_response(response.status)
                for name in ("Content-Type", "Content-Length", "Content-Disposition"):
                    value = response.getheader(name)
                    if value is not None:
                        self.send_header(name, value)
                self.end_headers()
                while chunk := response.read(CHUNK):
                    self.wfile.write(chunk)
            except OSError:
                with proxy._lock:
                    proxy.counts["upstream_failed"] += 1
                if not answering:  # else the client sees the answer broken off, as from a real server dying
                    self._answer(502, b"upstream failed\n")
            finally:
                upstream.close()

    return Handler
