"""A STUB of a MapReduce JobHistory Server's REST API, for tests and benchmarks: no JobHistory server can run here.

It is NOT a JobHistory Server. It serves, on 127.0.0.1 and a free port, in a background thread, the documented
response shapes of ``/ws/v1/history/mapreduce/jobs/...`` (refdata README section 4.1, the bodies in
``../shared/refdata/hadoop/jobhistory-rest``) rendered from ``MapReduceApp`` models that ``fetchers.jhist`` read
from REAL ``.jhist`` files. So the REST path and the file path can be checked against each other on the same
real jobs. Ids are the real, zero-padded ones of those jobs (``task_1329348432655_0001_m_000007``).

What the model does not hold is made up, plainly: a task's attempts other than its kept one (the model only
counts them) are listed before the kept one with made-up times; racks are ``/default-rack``; containers and log
links are placeholders; a map attempt has no ``mapFinishTime`` (REST never gives one).

Switches: ``status`` makes every answer fail with that HTTP status; ``fail`` maps a path fragment to a status
(``{"/counters": 404}``); ``hang`` maps a path fragment to seconds waited before answering (a timing-out server);
``delay_s`` slows every answer; ``jettison`` writes empty lists as ``""`` and one-element lists as the bare
element, as Jersey 2 with Jettison does. ``requests`` logs every path asked for; ``max_in_flight`` is the most
requests it was answering at once.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from appmodel.mapreduce import (
    COUNTER_COLUMNS,
    MR_TASK_COLUMNS,
    MapReduceApp,
    MRJobStatus,
    MRPhase,
    MRPhaseKind,
    MRTaskColumns,
    MRTaskStatus,
)
from fetchers.jhist import find_history_files, read_job

JHS_REST = Path(__file__).resolve().parents[2] / "shared" / "refdata" / "hadoop" / "jobhistory-rest"
JHIST_DIR = Path(__file__).resolve().parents[2] / "shared" / "refdata" / "hadoop" / "jhist"
PREFIX = "/ws/v1/history/mapreduce/jobs"

# column -> (group, counter) it is rendered as: the first counter feeding it.
_COUNTER_OF_COLUMN: dict[str, tuple[str, str]] = {}
for _key, _column in COUNTER_COLUMNS.items():
    _COUNTER_OF_COLUMN.setdefault(_column, _key)

_TASK_STATE = {
    MRTaskStatus.SUCCEEDED: "SUCCEEDED",
    MRTaskStatus.FAILED: "FAILED",
    MRTaskStatus.KILLED: "KILLED",
    MRTaskStatus.INCOMPLETE: "RUNNING",
}


def documented(name_prefix: str) -> Any:
    """The documented response body whose file name starts with ``name_prefix`` (e.g. "02_"), a fresh copy."""
    return copy.deepcopy(_documented(name_prefix))


@functools.cache
def _documented(name_prefix: str) -> Any:
    paths = sorted(JHS_REST.glob(f"{name_prefix}*.json"))
    return json.loads(paths[0].read_text())


def real_jobs() -> list[MapReduceApp]:
    """Every real .jhist job under refdata, read by ``fetchers.jhist`` (with its _conf.xml when there is one)."""
    files, _errors = find_history_files(JHIST_DIR)
    return [read_job(job_files) for job_files in files]


def tiled_job(base: MapReduceApp, maps: int, reduces: int, *, failed_every: int = 0) -> MapReduceApp:
    """A large job made of a real job's task rows repeated (``maps`` and ``reduces`` rows), every
    ``failed_every``-th map failed after 4 attempts; for benchmarks and sampling tests."""
    job = copy.copy(base)
    job.maps = _tiled_phase(base.maps, maps, failed_every)
    job.reduces = _tiled_phase(base.reduces, reduces, 0)
    return job


def _tiled_phase(phase: MRPhase, count: int, failed_every: int) -> MRPhase:
    source = phase.tasks
    if len(source) == 0 or count == 0:
        return MRPhase(phase.kind, total_tasks=count)
    columns: dict[str, Any] = {name: np.resize(getattr(source, name), count) for name, _ in MR_TASK_COLUMNS}
    columns["index"] = np.arange(count, dtype=np.int32)
    reasons: dict[int, str] = {}
    if failed_every > 0:
        failed = np.arange(failed_every - 1, count, failed_every)
        columns["status"][failed] = MRTaskStatus.FAILED
        columns["attempt"][failed] = 3
        columns["attempts"][failed] = 4
        columns["failed_attempts"][failed] = 4
        columns["killed_attempts"][failed] = 0
        reasons = {int(row): "Error: java.lang.RuntimeException: Intentional map failure" for row in failed}
    return MRPhase(
        phase.kind,
        tasks=MRTaskColumns.from_columns(columns, reasons),
        total_tasks=count,
        reported_finished=int(np.count_nonzero(columns["status"] == MRTaskStatus.SUCCEEDED)),
    )


class _Job:
    """One job's REST answers, rendered from its model on demand."""

    def __init__(self, app: MapReduceApp, stub: JhsStub) -> None:
        self.app = app
        self.stub = stub
        self.rows: dict[str, tuple[MRPhase, int]] = {}  # task id -> (phase, row)
        self.task_ids: dict[MRPhaseKind, list[str]] = {}
        stem = app.job_id.removeprefix("job_")
        for phase in app.phases:
            letter = "m" if phase.kind is MRPhaseKind.MAP else "r"
            ids = [f"task_{stem}_{letter}_{int(index):06d}" for index in phase.tasks.index]
            self.task_ids[phase.kind] = ids
            for row, task_id in enumerate(ids):
                self.rows[task_id] = (phase, row)

    def wrap(self, outer: str, inner: str, items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        if self.stub.jettison and not items:
            return {outer: ""} if not extra else {outer: {**extra}}
        listed: Any = items[0] if self.stub.jettison and len(items) == 1 else items
        return {outer: {**extra, inner: listed}}

    def job(self) -> dict[str, Any]:
        app = self.app
        body = documented("02_")
        job = body["job"]
        state = app.status.value if app.status is not MRJobStatus.INCOMPLETE else "RUNNING"
        job.update(
            id=app.job_id,
            name=app.name,
            user=app.user,
            queue=app.queue,
            state=state,
            submitTime=app.submit_ms or 0,
            startTime=app.launch_ms or 0,
            finishTime=app.finish_ms or 0,
            uberized=app.uberized,
            diagnostics=app.diagnostics,
        )
        for phase, prefix, singular in ((app.maps, "maps", "Map"), (app.reduces, "reduces", "Reduce")):
            tasks = phase.tasks
            job[f"{prefix}Total"] = phase.total_tasks
            job[f"{prefix}Completed"] = (
                phase.reported_finished if phase.reported_finished is not None else phase.num_succeeded
            )
            job[f"successful{singular}Attempts"] = phase.num_succeeded
            job[f"failed{singular}Attempts"] = int(tasks.failed_attempts.sum())
            job[f"killed{singular}Attempts"] = int(tasks.killed_attempts.sum())
            durations = tasks.duration_ms[tasks.succeeded]
            job[f"avg{singular}Time"] = int(durations.mean()) if len(durations) else 0
        return body

    def counters(self) -> dict[str, Any]:
        app = self.app
        groups = []
        for group, counters in app.counters.items():
            groups.append(
                {
                    "counterGroupName": group,
                    "counter": [
                        {
                            "name": name,
                            "totalCounterValue": value,
                            "mapCounterValue": app.map_counters.get(group, {}).get(name, 0),
                            "reduceCounterValue": app.reduce_counters.get(group, {}).get(name, 0),
                        }
                        for name, value in counters.items()
                    ],
                }
            )
        return self.wrap("jobCounters", "counterGroup", groups, id=self.app.job_id)

    def conf(self) -> dict[str, Any]:
        properties = [{"name": k, "value": v, "source": ["job.xml"]} for k, v in self.app.conf.items()]
        path = f"hdfs://namenode:8020/user/{self.app.user}/.staging/{self.app.job_id}/job.xml"
        return self.wrap("conf", "property", properties, path=path)

    def job_attempts(self) -> dict[str, Any]:
        host = self.app.am_host or "localhost"
        attempts = [
            {
                "nodeId": f"{host}:8041",
                "nodeHttpAddress": f"{host}:8042",
                "startTime": self.app.launch_ms or 0,
                "id": number,
                "containerId": f"container_{self.app.job_id.removeprefix('job_')}_{number:02d}_000001",
            }
            for number in range(1, self.app.am_attempts + 1)
        ]
        return self.wrap("jobAttempts", "jobAttempt", attempts)

    def task(self, task_id: str) -> dict[str, Any]:
        phase, row = self.rows[task_id]
        tasks = phase.tasks
        status = MRTaskStatus(int(tasks.status[row]))
        kept = self._kept_number(phase, row)
        start = int(tasks.task_start_ms[row])
        finish = int(tasks.task_finish_ms[row])
        return {
            "id": task_id,
            "type": phase.kind.value.upper(),
            "state": _TASK_STATE[status],
            "startTime": start if start > 0 else -1,
            "finishTime": finish,
            "elapsedTime": max(0, finish - start) if start > 0 and finish > 0 else 0,
            "progress": 100.0 if status is MRTaskStatus.SUCCEEDED else 0.0,
            "successfulAttempt": self._attempt_id(task_id, kept)
            if status is MRTaskStatus.SUCCEEDED and kept >= 0
            else "",
        }

    def tasks(self) -> dict[str, Any]:
        ids = [task_id for phase in self.app.phases for task_id in self.task_ids[phase.kind]]
        return self.wrap("tasks", "task", [self.task(task_id) for task_id in ids])

    def _kept_number(self, phase: MRPhase, row: int) -> int:
        return int(phase.tasks.attempt[row])

    @staticmethod
    def _attempt_id(task_id: str, number: int) -> str:
        return f"attempt_{task_id.removeprefix('task_')}_{number}"

    def attempts(self, task_id: str) -> list[dict[str, Any]]:
        """The task's attempts: the made-up others first (ending before the kept one), then the kept one."""
        phase, row = self.rows[task_id]
        tasks = phase.tasks
        status = MRTaskStatus(int(tasks.status[row]))
        kept = self._kept_number(phase, row)
        total, failed, killed = (
            int(tasks.attempts[row]),
            int(tasks.failed_attempts[row]),
            int(tasks.killed_attempts[row]),
        )
        kept_state = None
        if kept >= 0:
            if status is MRTaskStatus.SUCCEEDED:
                kept_state = "SUCCEEDED"
            elif status is MRTaskStatus.KILLED:
                kept_state = "KILLED" if killed else "FAILED"
            else:
                kept_state = "FAILED" if failed else "KILLED" if killed else "RUNNING"
        others = ["FAILED"] * (failed - (kept_state == "FAILED")) + ["KILLED"] * (killed - (kept_state == "KILLED"))
        others += ["RUNNING"] * max(0, total - (kept_state is not None) - len(others))
        numbers = [n for n in range(len(others) + 1) if n != kept][: len(others)]
        host = self.app.hosts[int(tasks.host[row])] if 0 <= int(tasks.host[row]) < len(self.app.hosts) else ""
        start = int(tasks.start_ms[row])
        listed = []
        for position, (number, state) in enumerate(zip(numbers, others, strict=True)):
            ended = state != "RUNNING"
            finish = max(0, start - 1 - position) if ended and start > 0 else 0
            listed.append(self._attempt(phase, task_id, number, state, finish - 1000 if finish else 0, finish, host))
        if kept_state is not None:
            attempt = self._attempt(phase, task_id, kept, kept_state, start, int(tasks.finish_ms[row]), host, row=row)
            listed.append(attempt)
        return listed

    def _attempt(
        self,
        phase: MRPhase,
        task_id: str,
        number: int,
        state: str,
        start: int,
        finish: int,
        host: str,
        *,
        row: int | None = None,
    ) -> dict[str, Any]:
        attempt: dict[str, Any] = documented("10_")["taskAttempt"]
        container = f"container_{self.app.job_id.removeprefix('job_')}_01_{number + 2:06d}"
        attempt.update(
            id=self._attempt_id(task_id, number),
            type=phase.kind.value.upper(),
            state=state,
            startTime=start,
            finishTime=finish,
            elapsedTime=max(0, finish - start) if start and finish else 0,
            progress=100.0 if state == "SUCCEEDED" else 0.0,
            rack="/default-rack",
            nodeHttpAddress=f"{host}:8042" if host else "",
            assignedContainerId=container,
            diagnostics=phase.tasks.failure_reasons.get(row, "") if row is not None else "",
        )
        if phase.kind is MRPhaseKind.REDUCE:
            tasks = phase.tasks
            shuffle = int(tasks.shuffle_finish_ms[row]) if row is not None else 0
            merge = int(tasks.sort_finish_ms[row]) if row is not None else 0
            attempt.update(
                shuffleFinishTime=shuffle,
                mergeFinishTime=merge,
                elapsedShuffleTime=max(0, shuffle - start) if shuffle and start else 0,
                elapsedMergeTime=max(0, merge - shuffle) if merge and shuffle else 0,
                elapsedReduceTime=max(0, finish - merge) if finish and merge else 0,
            )
        return attempt

    def task_counters(self, task_id: str, outer: str, group_key: str, *, kept_only: str | None = None) -> Any:
        """Counters of a task (or, with ``kept_only``, of that attempt, empty unless it is the kept one)."""
        phase, row = self.rows[task_id]
        tasks = phase.tasks
        groups: dict[str, list[dict[str, Any]]] = {}
        kept_id = self._attempt_id(task_id, self._kept_number(phase, row))
        if bool(tasks.has_counters[row]) and (kept_only is None or kept_only == kept_id):
            for column, (group, name) in _COUNTER_OF_COLUMN.items():
                groups.setdefault(group, []).append({"name": name, "value": int(getattr(tasks, column)[row])})
        listed = [{"counterGroupName": group, "counter": counters} for group, counters in groups.items()]
        return self.wrap(outer, group_key, listed, id=kept_only or task_id)


class JhsStub:
    """One stub JobHistory Server serving the given jobs; use as a context manager or call ``stop()``."""

    def __init__(self, jobs: Iterable[MapReduceApp]) -> None:
        self.jobs: dict[str, _Job] = {}
        for app in jobs:
            self.jobs[app.job_id] = _Job(app, self)
        self.status: int | None = None
        self.fail: dict[str, int] = {}
        self.hang: dict[str, float] = {}
        self.delay_s = 0.0
        self.jettison = False
        self.requests: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self), bind_and_activate=False)
        server.request_queue_size = 128
        server.daemon_threads = True
        server.server_bind()
        server.server_activate()
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="jhs-stub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> JhsStub:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._thread.is_alive():
            self.stop()

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    def serve(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(path)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for fragment, seconds in self.hang.items():
                if fragment in path:
                    time.sleep(seconds)
            if self.delay_s:
                time.sleep(self.delay_s)
            if self.status is not None:
                return self.status, _remote_exception("stub failure")
            for fragment, status in self.fail.items():
                if fragment in path:
                    return status, _remote_exception(f"stub failure for {fragment}")
            return self.answer(path, query)
        finally:
            with self._lock:
                self.in_flight -= 1

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        if path.rstrip("/") == "/ws/v1/history/info":
            return 200, documented("00_")
        if path.rstrip("/") == PREFIX:
            return 200, self._listing(query)
        if not path.startswith(PREFIX + "/"):
            return 404, _remote_exception(f"no such path {path}")
        parts = [unquote(part) for part in path[len(PREFIX) + 1 :].strip("/").split("/")]
        job = self.jobs.get(parts[0])
        if job is None:
            return 404, _remote_exception(f"job, {parts[0]}, is not found", "NotFoundException")
        rest = parts[1:]
        if not rest:
            return 200, job.job()
        simple = {"counters": job.counters, "conf": job.conf, "jobattempts": job.job_attempts, "tasks": job.tasks}
        if len(rest) == 1 and rest[0] in simple:
            return 200, simple[rest[0]]()
        if rest[0] != "tasks" or rest[1] not in job.rows:
            return 404, _remote_exception(f"task not found with id {rest[-1]}", "NotFoundException")
        task_id = rest[1]
        if len(rest) == 2:
            return 200, {"task": job.task(task_id)}
        if rest[2:] == ["counters"]:
            return 200, job.task_counters(task_id, "jobTaskCounters", "taskCounterGroup")
        if rest[2:] == ["attempts"]:
            return 200, job.wrap("taskAttempts", "taskAttempt", job.attempts(task_id))
        if len(rest) >= 4 and rest[2] == "attempts":
            attempts = {attempt["id"]: attempt for attempt in job.attempts(task_id)}
            if rest[3] not in attempts:
                return 404, _remote_exception(f"attempt not found with id {rest[3]}", "NotFoundException")
            if len(rest) == 4:
                return 200, {"taskAttempt": attempts[rest[3]]}
            if rest[4:] == ["counters"]:
                return 200, job.task_counters(
                    task_id, "jobTaskAttemptCounters", "taskAttemptCounterGroup", kept_only=rest[3]
                )
        return 404, _remote_exception(f"no such path {path}")

    def _listing(self, query: dict[str, list[str]]) -> dict[str, Any]:
        begin = int(query.get("finishedTimeBegin", ["0"])[0])
        end = int(query.get("finishedTimeEnd", [str(2**62)])[0])
        listed = []
        for job in self.jobs.values():
            summary = job.job()["job"]
            if begin <= summary["finishTime"] <= end:
                listed.append({key: summary[key] for key in documented("01_")["jobs"]["job"][0] if key in summary})
        return {"jobs": {"job": listed}}


def _remote_exception(message: str, kind: str = "WebApplicationException") -> dict[str, Any]:
    return {"RemoteException": {"exception": kind, "message": message, "javaClassName": f"x.{kind}"}}


def _handler_for(stub: JhsStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real Jetty answers
        disable_nagle_algorithm = True  # headers and body are separate writes: no delayed-ACK stalls
        wbufsize = 1 << 16  # one send per answer (flushed after each request by the base class)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            status, body = stub.serve(parts.path, parse_qs(parts.query))
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, fmt: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
