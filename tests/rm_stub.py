"""A STUB of a YARN ResourceManager's REST API, for tests: no real ResourceManager can run here.

It is NOT a ResourceManager. Its answers are built from the documented JSON response bodies in
``../shared/refdata/hadoop/rm-rest`` (Hadoop's ResourceManagerRest.md, copied verbatim: ``00_*`` for
``/ws/v1/cluster/info``, ``05_*`` for ``/ws/v1/cluster/apps``) with the ids made realistic (zero-padded
``application_1326821518301_0005``, as real RMs write them) and the finish times each test sets.

It serves, on 127.0.0.1 and a free port, in a background thread:

* ``/ws/v1/cluster/info``: the 00 example with ``haState`` as configured (``None`` leaves the key out, like a
  non-HA RM of some versions);
* ``/ws/v1/cluster/apps``: the apps given, filtered as the RM filters them: ``finishedTimeBegin`` and
  ``finishedTimeEnd`` (inclusive, ms), ``states`` and ``applicationTypes`` (comma-separated, any case); a
  standby answers 307 with a "This is standby RM" text page and no Location, standing for a real standby's
  redirect when it knows no active RM.

``empty_apps`` sets the body of an empty answer (Jersey 1 ``{"apps": {}}``, Jersey 2 ``""``, ``None``, or the
key left out); ``status`` makes every request fail with that HTTP status; ``stop()`` closes the port, so
connections are refused; ``requests`` records each request's path and query.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

RM_REST = Path(__file__).resolve().parents[2] / "shared" / "refdata" / "hadoop" / "rm-rest"
CLUSTER_TIMESTAMP = 1326821518301
_ABSENT = object()


def documented(name_prefix: str) -> Any:
    """The documented response body whose file name starts with ``name_prefix`` (e.g. "05_")."""
    (path,) = RM_REST.glob(f"{name_prefix}*.json")
    return json.loads(path.read_text())


def rm_app(
    number: int,
    finished_ms: int,
    *,
    final_status: str = "SUCCEEDED",
    state: str | None = None,
    application_type: str = "SPARK",
    **overrides: Any,
) -> dict[str, Any]:
    """One app of the documented ``/apps`` example, with a zero-padded id and the given outcome and times."""
    app: dict[str, Any] = copy.deepcopy(documented("05_")["apps"]["app"][0])
    app_id = f"application_{CLUSTER_TIMESTAMP}_{number:04d}"
    elapsed = app["elapsedTime"]
    default_state = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "KILLED": "KILLED"}.get(final_status, "FINISHED")
    app.update(
        id=app_id,
        clusterId=CLUSTER_TIMESTAMP,
        state=state or default_state,
        finalStatus=final_status,
        applicationType=application_type,
        startedTime=finished_ms - elapsed,
        finishedTime=finished_ms,
        trackingUrl=f"http://rm1.example.com:8088/proxy/{app_id}/",
        amContainerLogs=f"http://nm1.example.com:8042/node/containerlogs/container_{CLUSTER_TIMESTAMP}_{number:04d}_01_000001/user2",
    )
    app.update(overrides)
    return app


class RmStub:
    """One stub ResourceManager; use as a context manager or call ``stop()``."""

    def __init__(self, apps: list[dict[str, Any]] | None = None, ha_state: str | None = "ACTIVE") -> None:
        self.apps = list(apps or [])
        self.ha_state = ha_state
        self.status: int | None = None  # every answer fails with this HTTP status when set
        self.empty_apps: Any = {}  # what "apps" holds when nothing matches; _ABSENT leaves the key out
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="rm-stub", daemon=True)
        self._thread.start()

    def leave_apps_key_out(self) -> None:
        """An empty answer without the ``apps`` key at all (Jersey 2 with MOXy)."""
        self.empty_apps = _ABSENT

    def stop(self) -> None:
        """Closes the port: later connections are refused, as by an RM that is down."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> RmStub:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._thread.is_alive():
            self.stop()

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, str]:
        """(status, content type, body) for one GET."""
        self.requests.append((path, query))
        if self.status is not None:
            return self.status, "application/json", json.dumps({"RemoteException": {"message": "stub failure"}})
        if path.rstrip("/") == "/ws/v1/cluster/info":
            body = documented("00_")
            body["clusterInfo"].pop("haState")
            if self.ha_state is not None:
                body["clusterInfo"]["haState"] = self.ha_state
            return 200, "application/json", json.dumps(body)
        if path.rstrip("/") == "/ws/v1/cluster/apps":
            if self.ha_state not in (None, "ACTIVE"):
                return 307, "text/plain", "This is standby RM. There is no active RM right now."
            matching = [app for app in self.apps if _matches(app, query)]
            if matching:
                return 200, "application/json", json.dumps({"apps": {"app": matching}})
            body = {} if self.empty_apps is _ABSENT else {"apps": self.empty_apps}
            return 200, "application/json", json.dumps(body)
        return 404, "application/json", json.dumps({"RemoteException": {"message": f"no such path {path}"}})


def _matches(app: dict[str, Any], query: dict[str, list[str]]) -> bool:
    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    def many(name: str) -> set[str] | None:
        value = one(name)
        return None if value is None else {v.strip().upper() for v in value.split(",") if v.strip()}

    begin, end = one("finishedTimeBegin"), one("finishedTimeEnd")
    if begin is not None and app["finishedTime"] < int(begin):
        return False
    if end is not None and app["finishedTime"] > int(end):
        return False
    states, kinds = many("states"), many("applicationTypes")
    if states is not None and app["state"].upper() not in states:
        return False
    return kinds is None or app["applicationType"].upper() in kinds


def _handler_for(stub: RmStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            status, content_type, body = stub.answer(parts.path, parse_qs(parts.query))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def rm_stubs(*ha_states: str | None, apps: list[dict[str, Any]] | None = None) -> Iterator[list[RmStub]]:
    """Several stub RMs (one per HA state) serving the same apps, stopped at the end."""
    stubs = [RmStub(apps, ha_state) for ha_state in ha_states]
    try:
        yield stubs
    finally:
        for stub in stubs:
            stub.__exit__()
