"""The ``mapreduce-jobhistory`` backend: MapReduce jobs from a JobHistory Server's REST API, as ``MapReduceApp``.

A job is read from ``/ws/v1/history/mapreduce/jobs/{job}``: the job itself, ``/counters``, ``/conf`` (``${var}``
resolved and secrets redacted by ``fetchers.hadoop_conf``, as for a ``_conf.xml``), ``/jobattempts`` and
``/tasks``; then, for every task (or a sample of a large job's tasks), ``/tasks/{t}/counters`` and
``/tasks/{t}/attempts``. A task that did not succeed takes its kept attempt's own counters
(``/tasks/{t}/attempts/{a}/counters``), since the model's row describes that attempt. The result fills the same
model, column for column, as the ``.jhist`` reader (``fetchers.jhist``), except what REST does not carry: a map
attempt's ``mapFinishTime`` (0 here), Hadoop's workflow ids, the job's priority.

Large jobs: the JobHistory Server is what Dr. Elephant's users saw fall over (one request per task, unbounded).
Here at most ``max_concurrency`` requests are in flight to it at any time (one thread pool per fetch, one HTTP
session per thread), and ``task_sample`` bounds the tasks fetched per phase: every FAILED task is kept, the
others are drawn by a random generator seeded with the job id, so fetching the same job twice gives the same
sample. The sample is recorded on the model (``MRPhase.sampled``, ``total_tasks``, ``task_sample_limit``).

Errors: the job unknown to the server (404) is permanent; a timeout, a refused connection or a 5xx (after the
HTTP policy's retries) is transient, and so is one on any task request (a job stored with holes would never be
fetched again). A 404 or an odd answer on a part (counters, conf, one task's attempts) becomes a warning on the
result. Answers are untrusted: wrong types, missing keys and the Jersey variants of empty and one-element lists
(``{}``, ``""``, ``null``, key absent, a bare object) are all read; nothing in an answer raises.

Ids: the ResourceManager's ``application_<ts>_<n>`` is the job ``job_<ts>_<n>``; real servers zero-pad ``n``
to 4 digits and task numbers to 6 (``task_1329348432655_0001_m_000007``); ids are taken from the answers, never
rebuilt, and quoted into URLs.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from appmodel.coerce import as_str, opt_int
from appmodel.mapreduce import (
    MR_TASK_COLUMNS,
    Counters,
    MapReduceApp,
    MRJobStatus,
    MRPhaseKind,
    MRTaskColumns,
    MRTaskStatus,
    canonical_group,
    counter_values,
)
from appmodel.redaction import Redactor
from fetchers.backends import (
    REDACTION_PARAMETER,
    AppRef,
    Backend,
    BackendError,
    Parameter,
    ParameterError,
    register,
)
from fetchers.hadoop_conf import resolve_and_redact
from fetchers.http import HTTP_PARAMETERS, HttpPolicy, PolicySession, get_json, mask_url, session_for

__all__ = ("JobHistoryBackend", "job_id_for", "sample_tasks")

JOBS_PATH: Final = "/ws/v1/history/mapreduce/jobs"
DEFAULT_TASK_SAMPLE: Final = 1000
DEFAULT_MAX_CONCURRENCY: Final = 4
MAX_CONCURRENCY: Final = 64
MAX_REASON_CHARS: Final = 8192  # as the .jhist reader keeps them
MAX_REASONS_PER_PHASE: Final = 1000
MAX_DIAGNOSTICS_CHARS: Final = 65536
_MAX_LISTED: Final = 5
_JOB_STATUS: Final = {
    "SUCCEEDED": MRJobStatus.SUCCEEDED,
    "FAILED": MRJobStatus.FAILED,
    "ERROR": MRJobStatus.FAILED,  # an internal error of the ApplicationMaster
    "KILLED": MRJobStatus.KILLED,
}
_TASK_STATUS: Final = {
    "SUCCEEDED": MRTaskStatus.SUCCEEDED,
    "FAILED": MRTaskStatus.FAILED,
    "KILLED": MRTaskStatus.KILLED,
}
_PHASE_OF_TYPE: Final = {"MAP": MRPhaseKind.MAP, "REDUCE": MRPhaseKind.REDUCE}
_PHASE_OF_LETTER: Final = {"m": MRPhaseKind.MAP, "r": MRPhaseKind.REDUCE}
_COLUMN_DEFAULTS: Final = {"attempt": -1, "host": -1}  # as MRTaskColumns.from_columns fills absent columns
_APP_ID: Final = re.compile(r"(?:application|job)_(\d+)_(\d+)")
LISTED_STATES: Final = frozenset({"SUCCEEDED", "FAILED", "KILLED", "ERROR"})


def job_id_for(app_id: str) -> str:
    """The MapReduce job id of a YARN application id (``application_1_0002`` -> ``job_1_0002``); a job id is kept.
    BackendError (permanent) for anything else."""
    match = _APP_ID.fullmatch(app_id.strip())
    if match is None:
        raise BackendError(f"{app_id[:80]!r} is neither a YARN application id nor a MapReduce job id", permanent=True)
    return f"job_{match.group(1)}_{match.group(2)}"


def sample_tasks(tasks: Sequence[Mapping[str, Any]], limit: int, seed: str) -> list[Mapping[str, Any]]:
    """The tasks of one phase to fetch: all when ``limit`` is 0 or not exceeded; else every FAILED task plus a
    random draw (seeded by ``seed``, so the same job gives the same sample) of the others up to ``limit``.

    The draw is made from the tasks sorted by id, so the server's listing order does not change it.
    """
    if limit <= 0 or len(tasks) <= limit:
        return list(tasks)
    failed = [task for task in tasks if as_str(task.get("state")).upper() == "FAILED"]
    others = sorted((task for task in tasks if as_str(task.get("state")).upper() != "FAILED"), key=_task_sort_key)
    room = max(0, limit - len(failed))
    chosen = random.Random(seed).sample(others, room)  # noqa: S311 (a sample, not a secret)
    return failed + chosen


def _task_sort_key(task: Mapping[str, Any]) -> str:
    return as_str(task.get("id"))


@register
class JobHistoryBackend(Backend):
    name = "mapreduce-jobhistory"
    label = "MapReduce JobHistory Server"
    parameters = (
        Parameter("url", str, "JobHistory Server web address (http://jhs:19888)", required=True),
        Parameter(
            "task_sample",
            int,
            "Tasks fetched per phase of a large job (every failed task is kept besides); 0 fetches every task",
            default=DEFAULT_TASK_SAMPLE,
        ),
        Parameter(
            "max_concurrency",
            int,
            "Requests in flight to the JobHistory Server at most, per job fetched",
            default=DEFAULT_MAX_CONCURRENCY,
        ),
        REDACTION_PARAMETER,
        *HTTP_PARAMETERS,
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.url = _base_url(self.name, self.params["url"])
        self.task_sample = int(self.params["task_sample"])
        if self.task_sample < 0:
            raise ParameterError(f"{self.name}.task_sample: expected 0 (every task) or more, got {self.task_sample}")
        self.max_concurrency = int(self.params["max_concurrency"])
        if not 1 <= self.max_concurrency <= MAX_CONCURRENCY:
            raise ParameterError(
                f"{self.name}.max_concurrency: expected 1 to {MAX_CONCURRENCY}, got {self.max_concurrency}"
            )
        self.redaction_patterns = list(self.params["redaction_patterns"] or ())
        try:
            Redactor(self.redaction_patterns)
        except ValueError as error:
            raise ParameterError(f"{self.name}.redaction_patterns: {error}") from None
        self.policy = HttpPolicy.from_params(self.params)
        session_for(self.policy).close()  # SPNEGO without its library fails here, at configuration

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        """Jobs that finished in [start_ms, end_ms) (``/jobs?finishedTimeBegin=..&finishedTimeEnd=..``)."""
        with _Client(self) as client:
            body = client.get(JOBS_PATH, finishedTimeBegin=str(start_ms), finishedTimeEnd=str(end_ms - 1))
        refs: list[AppRef] = []
        for job in _items(body.get("jobs") if isinstance(body, dict) else None, "job"):
            job_id = as_str(job.get("id"))
            finished = opt_int(job.get("finishTime"), strings=True)
            if not job_id or as_str(job.get("state")).upper() not in LISTED_STATES:
                continue
            if finished is not None and finished > 0 and not start_ms <= finished < end_ms:
                continue
            extra = {key: job.get(key) for key in ("state", "queue") if isinstance(job.get(key), str)}
            refs.append(
                AppRef(
                    app_id=job_id,
                    finished_ms=finished if finished and finished > 0 else None,
                    name=as_str(job.get("name")),
                    user=as_str(job.get("user")),
                    extra=extra,
                )
            )
        refs.sort(key=lambda ref: (ref.finished_ms is None, ref.finished_ms or 0, ref.app_id))
        return refs

    def fetch(self, ref: AppRef) -> MapReduceApp:
        """The job of a listed app (a YARN application id or a job id); BackendError when it cannot be fetched."""
        return self.fetch_job(job_id_for(ref.app_id))

    def fetch_job(self, job_id: str) -> MapReduceApp:
        with _Client(self) as client:
            return _JobFetch(self, client, job_id).run()


class _Client:
    """GETs under the HTTP policy, one session per thread (a ``requests.Session`` is not made to be shared)."""

    def __init__(self, backend: JobHistoryBackend) -> None:
        self.base = backend.url
        self.policy = backend.policy
        self._local = threading.local()
        self._sessions: list[PolicySession] = []
        self._lock = threading.Lock()

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            for session in self._sessions:
                session.close()
            self._sessions.clear()

    def _session(self) -> PolicySession:
        session: PolicySession | None = getattr(self._local, "session", None)
        if session is None:
            session = session_for(self.policy)
            session.headers["Accept"] = "application/json"
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def get(self, path: str, **query: str) -> Any:
        return get_json(self._session(), self.base + path, **query)


@dataclass
class _TaskDetail:
    """What the per-task requests of one task gave."""

    counters: list[tuple[str, str, int]] | None = None  # None: no counters answered
    attempts: list[Mapping[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class _JobFetch:
    """One job's fetch: the requests, bounded by one thread pool, and the model built from their answers."""

    def __init__(self, backend: JobHistoryBackend, client: _Client, job_id: str) -> None:
        self.backend = backend
        self.client = client
        self.job_id = job_id
        self.job_path = f"{JOBS_PATH}/{quote(job_id, safe='')}"
        self.warnings: list[str] = []

    def run(self) -> MapReduceApp:
        with ThreadPoolExecutor(max_workers=self.backend.max_concurrency, thread_name_prefix="jobhistory") as pool:
            parts = {
                name: pool.submit(self.client.get, self.job_path + suffix)
                for name, suffix in (
                    ("job", ""),
                    ("tasks", "/tasks"),
                    ("counters", "/counters"),
                    ("conf", "/conf"),
                    ("jobattempts", "/jobattempts"),
                )
            }
            job_body = self._required(parts, "job")
            app = self._job(job_body)
            tasks_body = self._required(parts, "tasks")
            self._counters(app, self._optional(parts["counters"], "job counters"))
            self._conf(app, self._optional(parts["conf"], "job configuration"))
            self._am_attempts(app, self._optional(parts["jobattempts"], "ApplicationMaster attempts"))
            by_phase = self._tasks(tasks_body)
            selected: dict[MRPhaseKind, list[Mapping[str, Any]]] = {}
            for kind, tasks in by_phase.items():
                phase = app.maps if kind is MRPhaseKind.MAP else app.reduces
                chosen = sample_tasks(tasks, self.backend.task_sample, seed=f"{self.job_id}/{kind.value}")
                selected[kind] = chosen
                phase.total_tasks = max(phase.total_tasks, len(tasks))
                if len(chosen) < len(tasks):
                    phase.sampled = True
                    app.task_sample_limit = self.backend.task_sample
            details = self._details(pool, [task for tasks in selected.values() for task in tasks])
        hosts: dict[str, int] = {}
        for kind, tasks in selected.items():
            phase = app.maps if kind is MRPhaseKind.MAP else app.reduces
            phase.tasks = self._columns(kind, tasks, details, hosts)
        app.hosts = list(hosts)
        app.warnings.extend(dict.fromkeys(self.warnings))
        return app

    # -- requests

    def _required(self, parts: Mapping[str, Future[Any]], name: str) -> Any:
        try:
            return parts[name].result()
        except BackendError as error:
            for future in parts.values():
                future.cancel()
            if error.status == 404 and name == "job":
                raise BackendError(
                    f"{self.job_id}: not known to the JobHistory Server at {mask_url(self.backend.url)} "
                    f"(never run there, or removed after mapreduce.jobhistory.max-age-ms): {error}",
                    permanent=True,
                    status=404,
                ) from None
            raise

    def _optional(self, future: Future[Any], what: str) -> Any:
        """A part the job can do without: a permanent failure (4xx, not JSON) is a warning, a transient one raises."""
        try:
            return future.result()
        except BackendError as error:
            if not error.permanent:
                raise
            self.warnings.append(f"{what} not fetched: {error}")
            return None

    def _details(self, pool: ThreadPoolExecutor, tasks: Sequence[Mapping[str, Any]]) -> dict[str, _TaskDetail]:
        """The per-task requests, through the shared pool; the first transient failure stops the fetch."""
        futures = {pool.submit(self._task_detail, task): as_str(task.get("id")) for task in tasks}
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None:
                for other in pending:
                    other.cancel()
                raise error
        details = {futures[future]: future.result() for future in futures}
        problems = [problem for detail in details.values() for problem in detail.problems]
        if problems:
            more = len(problems) - _MAX_LISTED
            self.warnings.append(
                f"{len(problems)} task request(s) failed; those tasks lack counters or attempt data: "
                + "; ".join(problems[:_MAX_LISTED])
                + (f"; and {more} more" if more > 0 else "")
            )
        return details

    def _task_detail(self, task: Mapping[str, Any]) -> _TaskDetail:
        task_id = as_str(task.get("id"))
        path = f"{self.job_path}/tasks/{quote(task_id, safe='')}"
        detail = _TaskDetail()
        succeeded = as_str(task.get("state")).upper() == "SUCCEEDED"
        if succeeded:
            body = self._task_part(detail, path + "/counters", task_id)
            detail.counters = _task_counters(body, "jobTaskCounters", "taskCounterGroup")
        body = self._task_part(detail, path + "/attempts", task_id)
        detail.attempts = _items(body.get("taskAttempts") if isinstance(body, dict) else None, "taskAttempt")
        if not succeeded:
            kept = _kept_attempt(detail.attempts, as_str(task.get("successfulAttempt")))
            if kept is not None and as_str(kept.get("id")):
                attempt_path = f"{path}/attempts/{quote(as_str(kept.get('id')), safe='')}/counters"
                body = self._task_part(detail, attempt_path, task_id)
                detail.counters = _task_counters(body, "jobTaskAttemptCounters", "taskAttemptCounterGroup")
        return detail

    def _task_part(self, detail: _TaskDetail, path: str, task_id: str) -> Any:
        try:
            return self.client.get(path)
        except BackendError as error:
            if not error.permanent:
                raise
            detail.problems.append(f"{task_id[:80]}: HTTP {error.status}" if error.status else str(error)[:200])
            return None

    # -- the model

    def _job(self, body: Any) -> MapReduceApp:
        job = body.get("job") if isinstance(body, dict) else None
        if not isinstance(job, dict):
            raise BackendError(f"{self.job_id}: the JobHistory Server's job answer has no job object", permanent=True)
        app = MapReduceApp(job_id=as_str(job.get("id")) or self.job_id)
        app.source = mask_url(self.backend.url + self.job_path)
        app.name = as_str(job.get("name"))
        app.user = as_str(job.get("user"))
        app.queue = as_str(job.get("queue"))
        state = as_str(job.get("state")).upper()
        status = _JOB_STATUS.get(state)
        if status is None:
            app.status = MRJobStatus.INCOMPLETE
            app.partial = True
            self.warnings.append(
                f"the JobHistory Server reports the job {state[:40] or 'without a state'}: not finished, INCOMPLETE"
            )
        else:
            app.status = status
        app.submit_ms = _positive(job.get("submitTime"))
        app.launch_ms = _positive(job.get("startTime"))
        app.finish_ms = _positive(job.get("finishTime"))
        app.uberized = job.get("uberized") is True
        diagnostics = as_str(job.get("diagnostics"))
        if state == "ERROR" and not diagnostics:
            diagnostics = "the job ended in the ERROR state (an internal error of its ApplicationMaster)"
        app.diagnostics = diagnostics[:MAX_DIAGNOSTICS_CHARS]
        for phase, prefix in ((app.maps, "maps"), (app.reduces, "reduces")):
            total = opt_int(job.get(f"{prefix}Total"), strings=True)
            phase.total_tasks = max(total or 0, 0)
            phase.reported_finished = opt_int(job.get(f"{prefix}Completed"), strings=True)
        return app

    def _counters(self, app: MapReduceApp, body: Any) -> None:
        if body is None:
            return
        container = body.get("jobCounters") if isinstance(body, dict) else None
        if not isinstance(container, dict):
            self.warnings.append("job counters: the answer holds no jobCounters object; counters unknown")
            return
        totals: Counters = {}
        maps: Counters = {}
        reduces: Counters = {}
        skipped = 0
        for group in _items(container, "counterGroup"):
            group_name = canonical_group(as_str(group.get("counterGroupName")))
            for counter in _items(group, "counter"):
                name = as_str(counter.get("name"))
                total = opt_int(counter.get("totalCounterValue"), strings=True)
                if not group_name or not name or total is None:
                    skipped += 1
                    continue
                totals.setdefault(group_name, {})[name] = total
                for target, key in ((maps, "mapCounterValue"), (reduces, "reduceCounterValue")):
                    value = opt_int(counter.get(key), strings=True)
                    if value is not None:
                        target.setdefault(group_name, {})[name] = value
        if skipped:
            self.warnings.append(f"job counters: {skipped} counter(s) without a name or numeric value skipped")
        app.counters, app.map_counters, app.reduce_counters = totals, maps, reduces

    def _conf(self, app: MapReduceApp, body: Any) -> None:
        if body is None:
            return
        container = body.get("conf") if isinstance(body, dict) else None
        pairs: list[tuple[str, str]] = []
        for prop in _items(container, "property"):
            name, value = prop.get("name"), prop.get("value")
            if isinstance(name, str) and name and isinstance(value, str | int | float | bool):
                pairs.append((name, value if isinstance(value, str) else str(value).lower()))
        if not pairs:
            self.warnings.append("job configuration: the JobHistory Server returned no properties")
            return
        conf = resolve_and_redact(pairs, self.backend.redaction_patterns, name="job configuration")
        app.conf = conf.properties
        self.warnings.extend(conf.warnings)

    def _am_attempts(self, app: MapReduceApp, body: Any) -> None:
        attempts = _items(body.get("jobAttempts") if isinstance(body, dict) else None, "jobAttempt")
        app.am_attempts = len(attempts)
        if attempts:
            last = attempts[-1]
            address = as_str(last.get("nodeHttpAddress")) or as_str(last.get("nodeId"))
            app.am_host = _host(address)

    def _tasks(self, body: Any) -> dict[MRPhaseKind, list[Mapping[str, Any]]]:
        if not isinstance(body, dict):
            raise BackendError(f"{self.job_id}: the tasks answer is not a JSON object", permanent=True)
        phases: dict[MRPhaseKind, list[Mapping[str, Any]]] = {MRPhaseKind.MAP: [], MRPhaseKind.REDUCE: []}
        seen: set[str] = set()
        skipped = 0
        for task in _items(body.get("tasks"), "task"):
            task_id = as_str(task.get("id"))
            kind = _phase_of(task)
            if not task_id or kind is None or task_id in seen:
                skipped += 1
                continue
            seen.add(task_id)
            phases[kind].append(task)
        if skipped:
            self.warnings.append(f"{skipped} task(s) without an id or a MAP/REDUCE type, or listed twice, skipped")
        return phases

    def _columns(
        self,
        kind: MRPhaseKind,
        tasks: Sequence[Mapping[str, Any]],
        details: Mapping[str, _TaskDetail],
        hosts: dict[str, int],
    ) -> MRTaskColumns:
        rows: list[tuple[int, dict[str, int], str]] = []
        for position, task in enumerate(tasks):
            task_id = as_str(task.get("id"))
            detail = details.get(task_id, _TaskDetail())
            row, reason = _task_row(task, detail, hosts)
            index = _task_number(task_id)
            row["index"] = index if index is not None else position
            rows.append((row["index"], row, reason))
        rows.sort(key=lambda item: item[0])
        columns: dict[str, list[int]] = {name: [] for name, _ in MR_TASK_COLUMNS}
        for _index, row, _reason in rows:
            for name, values in columns.items():
                values.append(row.get(name, _COLUMN_DEFAULTS.get(name, 0)))
        reasons: dict[int, str] = {}
        dropped = 0
        for position, (_index, _row, reason) in enumerate(rows):
            if reason:
                if len(reasons) < MAX_REASONS_PER_PHASE:
                    reasons[position] = reason
                else:
                    dropped += 1
        if dropped:
            self.warnings.append(
                f"{dropped} more {kind.value} failure texts not kept (the first {MAX_REASONS_PER_PHASE} are)"
            )
        if not rows:
            return MRTaskColumns.empty()
        return MRTaskColumns.from_columns(columns, reasons)


def _task_row(task: Mapping[str, Any], detail: _TaskDetail, hosts: dict[str, int]) -> tuple[dict[str, int], str]:
    """One task's column values and failure text, from its listing entry and its per-task answers."""
    status = _TASK_STATUS.get(as_str(task.get("state")).upper(), MRTaskStatus.INCOMPLETE)
    attempts = detail.attempts
    states = [as_str(attempt.get("state")).upper() for attempt in attempts]
    row: dict[str, int] = {
        "status": int(status),
        "task_start_ms": _positive(task.get("startTime")) or 0,
        "task_finish_ms": _positive(task.get("finishTime")) or 0,
        "attempts": len(attempts),
        "failed_attempts": states.count("FAILED"),
        "killed_attempts": states.count("KILLED"),
        "attempt": -1,
        "host": -1,
    }
    reason = ""
    kept = _kept_attempt(attempts, as_str(task.get("successfulAttempt")))
    if kept is not None:
        number = _task_number(as_str(kept.get("id")))
        row["attempt"] = number if number is not None else -1
        start = _positive(kept.get("startTime")) or 0
        finish = _positive(kept.get("finishTime")) or 0
        row["start_ms"] = start
        row["finish_ms"] = finish
        row["duration_ms"] = max(0, finish - start) if start and finish else 0
        row["shuffle_finish_ms"] = _positive(kept.get("shuffleFinishTime")) or 0
        row["sort_finish_ms"] = _positive(kept.get("mergeFinishTime")) or 0
        host = _host(as_str(kept.get("nodeHttpAddress")))
        if host:
            row["host"] = hosts.setdefault(host, len(hosts))
        if status is not MRTaskStatus.SUCCEEDED:
            reason = as_str(kept.get("diagnostics"))[:MAX_REASON_CHARS]
    if detail.counters is not None:
        row.update(counter_values(detail.counters))
        row["has_counters"] = int(bool(detail.counters))
    return row, reason


def _kept_attempt(attempts: Sequence[Mapping[str, Any]], successful: str) -> Mapping[str, Any] | None:
    """The attempt a task's row describes, as the .jhist reader keeps it: the successful one, else the last to end."""
    if not attempts:
        return None
    for attempt in attempts:
        if successful and as_str(attempt.get("id")) == successful:
            return attempt
    for attempt in attempts:
        if as_str(attempt.get("state")).upper() == "SUCCEEDED":
            return attempt
    return max(
        attempts,
        key=lambda attempt: (_positive(attempt.get("finishTime")) or 0, _task_number(as_str(attempt.get("id"))) or 0),
    )


def _task_counters(body: Any, outer: str, group_key: str) -> list[tuple[str, str, int]] | None:
    """(group, counter, value) triples of a task or attempt counters answer; None when it holds no counter object."""
    container = body.get(outer) if isinstance(body, dict) else None
    if not isinstance(container, dict):
        return None
    triples: list[tuple[str, str, int]] = []
    for group in _items(container, group_key):
        group_name = as_str(group.get("counterGroupName"))
        for counter in _items(group, "counter"):
            name = as_str(counter.get("name"))
            value = opt_int(counter.get("value"), strings=True)
            if group_name and name and value is not None:
                triples.append((group_name, name, value))
    return triples


# ---- tolerant readers of untrusted JSON ------------------------------------------------------------------------


def _items(container: Any, key: str) -> list[Mapping[str, Any]]:
    """The objects of a wrapped list (``{"task": [...]}``), whatever form Jersey gave an empty or one-element list."""
    if not isinstance(container, dict):
        return []  # None, "" (Jersey 2 + Jettison), absent (MOXy)
    listed = container.get(key)
    if isinstance(listed, dict):
        return [listed] if listed else []
    if isinstance(listed, list):
        return [item for item in listed if isinstance(item, dict)]
    return []


def _positive(value: Any) -> int | None:
    """An epoch-ms time: None when absent, -1 (never started) or 0 (not finished)."""
    number = opt_int(value, strings=True)
    return number if number is not None and number > 0 else None


def _task_number(task_or_attempt_id: str) -> int | None:
    """The last number of a task or attempt id (``task_1_0001_m_000042`` -> 42)."""
    tail = task_or_attempt_id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() and len(tail) <= 9 else None


def _phase_of(task: Mapping[str, Any]) -> MRPhaseKind | None:
    kind = _PHASE_OF_TYPE.get(as_str(task.get("type")).upper())
    if kind is None:
        parts = as_str(task.get("id")).split("_")
        kind = _PHASE_OF_LETTER.get(parts[-2]) if len(parts) >= 3 else None
    return kind


def _host(address: str) -> str:
    """``host:8042`` -> ``host`` (IPv6 in brackets kept whole)."""
    address = address.strip()
    if address.startswith("["):
        return address.split("]", 1)[0] + "]"
    return address.rsplit(":", 1)[0] if address.count(":") == 1 else address


def _base_url(backend: str, url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"  # how mapreduce.jobhistory.webapp.address is written: host:port
    if not url.startswith(("http://", "https://")):
        raise ParameterError(f"{backend}.url: {mask_url(url)!r} is not an http(s) address")
    return url.removesuffix("/ws/v1/history")
