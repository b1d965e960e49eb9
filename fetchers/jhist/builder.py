"""JhistBuilder: the lines of one job history -> ``MapReduceApp``, in one streaming pass.

How the model is built:

* one row per task that appears (TASK_STARTED or any attempt event), holding the task's *kept attempt*: the first
  attempt that succeeded, else the last one to end; attempt, failure and kill counts cover every attempt, so
  speculative attempts killed after another won are counted but never replace the winner;
* the task's status comes from TASK_FINISHED (SUCCEEDED) or TASK_FAILED (its FAILED/KILLED status); with no task
  event it is SUCCEEDED if an attempt succeeded, else INCOMPLETE;
* the job's status comes from JOB_FINISHED (SUCCEEDED) or JOB_FAILED/JOB_KILLED/JOB_ERROR (their ``jobStatus``;
  ERROR counts as FAILED); with none the job is INCOMPLETE and the model ``partial``;
* setup and cleanup attempts, TASK_UPDATED, NORMALIZED_RESOURCE and JOB_STATUS_CHANGED are known and skipped.

* a recovered job's new ApplicationMaster logs its predecessor's task events again: attempts already seen are
  skipped (counted in ``ParseStats.skipped_events``), so nothing is counted twice.

Task data is written into growing numpy matrices (a few hundred bytes a task), so time and memory stay linear in
the number of tasks. The per-task events, nearly every line, are decoded by a typed msgspec decoder that skips the
fields not modelled; the first event of each type, and any line that does not fit it, take a tolerant orjson path
that reads any shape and checks keys against those Hadoop writes (``ParseStats.unknown_keys``). Bad input never
raises: a line that is not JSON, or an event missing what it needs, is counted malformed and skipped (the first
few named in a warning); unknown events are counted by type.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import orjson

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
from appmodel.spark import ParseStats
from fetchers.budgets import Clipper, ReadBudgets, TimingFixes, default_budgets
from fetchers.jhist.events import (
    _ABSENT,
    _ATTEMPT_FINISHED,
    _ATTEMPT_STARTED,
    _ATTEMPT_UNSUCCESSFUL,
    _DECODER,
    _JOB_UNSUCCESSFUL,
    _KNOWN_KEYS,
    _PHASE_OF_LETTER,
    _PHASE_OF_TYPE,
    _SKIPPED_EVENTS,
    _TASK_EVENTS,
    BadEvent,
    _attempt_number,
    _counter_groups,
    _counters_dict,
    _Envelope,
    _id_number,
    _int,
    _int_or,
    _opt,
    _TaskEvent,
    _text,
    _typed_counters,
)

HEADER: Final = b"Avro-Json"
MAX_REASONS_PER_PHASE: Final = 1000
MAX_REASON_CHARS: Final = 8192
MAX_DIAGNOSTICS_CHARS: Final = 65536
_MAX_LISTED_PROBLEMS: Final = 5
_MAX_UNKNOWN_NAMES: Final = 50  # a hostile file must not grow ParseStats without bound


class JhistError(Exception):
    """The file cannot be read as a job history at all (one line)."""


_COLUMN_INDEX: Final = {name: i for i, (name, _) in enumerate(MR_TASK_COLUMNS)}
_HAS_SUCCESS: Final = len(MR_TASK_COLUMNS)  # internal column: an attempt of the task succeeded
# Internal columns: bit n set when attempt n of the task was seen started / ended. A recovered job's new AM logs
# its predecessor's events again; these keep them from being counted twice without a set of attempt ids.
_STARTED_BITS: Final = _HAS_SUCCESS + 1
_ENDED_BITS: Final = _HAS_SUCCESS + 2
_WIDTH: Final = _HAS_SUCCESS + 3
_MAX_BIT: Final = 62  # attempt numbers above it (a recovered AM numbers its attempts from 1000) go to a set
_C_INDEX: Final = _COLUMN_INDEX["index"]
_C_ATTEMPT: Final = _COLUMN_INDEX["attempt"]
_C_STATUS: Final = _COLUMN_INDEX["status"]
_C_TASK_START: Final = _COLUMN_INDEX["task_start_ms"]
_C_TASK_FINISH: Final = _COLUMN_INDEX["task_finish_ms"]
_C_START: Final = _COLUMN_INDEX["start_ms"]
_C_FINISH: Final = _COLUMN_INDEX["finish_ms"]
_C_DURATION: Final = _COLUMN_INDEX["duration_ms"]
_C_MAP_FINISH: Final = _COLUMN_INDEX["map_finish_ms"]
_C_SHUFFLE_FINISH: Final = _COLUMN_INDEX["shuffle_finish_ms"]
_C_SORT_FINISH: Final = _COLUMN_INDEX["sort_finish_ms"]
_TIMES_END: Final = _C_SORT_FINISH + 1
_TIME_COLUMNS: Final = (_C_START, _C_FINISH, _C_DURATION, _C_MAP_FINISH, _C_SHUFFLE_FINISH, _C_SORT_FINISH)
if tuple(range(_C_START, _TIMES_END)) != _TIME_COLUMNS:  # _attempt_end writes these as one slice
    raise RuntimeError("MR_TASK_COLUMNS reordered: the attempt time columns must stay adjacent")
_C_ATTEMPTS: Final = _COLUMN_INDEX["attempts"]
_C_FAILED: Final = _COLUMN_INDEX["failed_attempts"]
_C_KILLED: Final = _COLUMN_INDEX["killed_attempts"]
_C_HOST: Final = _COLUMN_INDEX["host"]
_C_HAS_COUNTERS: Final = _COLUMN_INDEX["has_counters"]
_COUNTER_INDEX: Final = {key: _COLUMN_INDEX[column] for key, column in COUNTER_COLUMNS.items()}
_FIRST_COUNTER: Final = min(_COUNTER_INDEX.values())
_MAX_RESERVED_ROWS: Final = 1 << 16
_NO_TASK_STATUS: Final = -1  # internal: no task-end event yet


class _Phase:
    """Growing task matrix of one phase: one int64 row per task, columns as MR_TASK_COLUMNS (+ internal ones)."""

    __slots__ = ("data", "kind", "reasons", "reasons_dropped", "rows", "size")

    def __init__(self, kind: MRPhaseKind) -> None:
        self.kind = kind
        self.rows: dict[str, int] = {}  # task id -> row
        self.data = np.zeros((0, _WIDTH), dtype=np.int64)
        self.size = 0
        self.reasons: dict[int, str] = {}
        self.reasons_dropped = 0

    def reserve(self, capacity: int) -> None:
        if capacity > self.data.shape[0]:
            grown = np.zeros((capacity, _WIDTH), dtype=np.int64)
            grown[: self.size] = self.data[: self.size]
            self.data = grown

    def row(self, task_id: str) -> int:
        row = self.rows.get(task_id)
        if row is not None:
            return row
        index = _id_number(task_id, "a task")
        row = self.size
        if row >= self.data.shape[0]:
            self.reserve(max(16, 2 * self.data.shape[0]))
        values = self.data[row]
        values[_C_INDEX] = index
        values[_C_ATTEMPT] = -1
        values[_C_HOST] = -1
        values[_C_STATUS] = _NO_TASK_STATUS
        self.rows[task_id] = row
        self.size += 1
        return row

    def reason(self, row: int, text: str, *, replace: bool) -> None:
        if not text or (row in self.reasons and not replace):
            return
        if row not in self.reasons and len(self.reasons) >= MAX_REASONS_PER_PHASE:
            self.reasons_dropped += 1
            return
        self.reasons[row] = text[:MAX_REASON_CHARS]

    def columns(self) -> MRTaskColumns:
        data = self.data[: self.size]
        status = data[:, _C_STATUS].copy()
        pending = status == _NO_TASK_STATUS
        status[pending] = np.where(data[pending, _HAS_SUCCESS] != 0, MRTaskStatus.SUCCEEDED, MRTaskStatus.INCOMPLETE)
        order = np.argsort(data[:, _C_INDEX], kind="stable")
        columns: dict[str, Any] = {}
        for name, i in _COLUMN_INDEX.items():
            columns[name] = (status if i == _C_STATUS else data[:, i])[order]
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        reasons = {int(position[row]): text for row, text in self.reasons.items()}
        return MRTaskColumns.from_columns(columns, reasons)


class JhistBuilder:
    """Feed it every line of one history file (header included), then ``finish()``."""

    def __init__(self, *, source: str, budgets: ReadBudgets | None = None) -> None:
        self.app = MapReduceApp(job_id="", source=source)
        self.clip = Clipper(budgets or default_budgets())
        self.stats: ParseStats = self.app.stats
        self.phases = {MRPhaseKind.MAP: _Phase(MRPhaseKind.MAP), MRPhaseKind.REDUCE: _Phase(MRPhaseKind.REDUCE)}
        self.declared = {MRPhaseKind.MAP: 0, MRPhaseKind.REDUCE: 0}
        self.hosts: dict[str, int] = {}
        self.attempt_starts: dict[str, tuple[int, int]] = {}  # attempt id -> (start ms, host) until it ends
        self.partial = False
        self.unterminated = False
        self.torn_tail = False
        self.job_ended = False
        self._line_no = 0
        self._seen_types: set[str] = set()
        self._problems: list[str] = []
        self._problem_count = 0
        self._high_attempts: set[tuple[int, str]] = set()

    def report(self, message: str, *, partial: bool) -> None:
        self.app.warnings.append(f"{_name(self.app.source)}: {message}")
        self.partial = self.partial or partial

    # -- lines

    def feed(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            self._line_no += 1
            if self._line_no == 1:
                self._header(line)
                continue
            if not line or (line[:1].isspace() and not line.strip()):  # blank lines are not lines
                continue
            self.stats.lines += 1
            try:
                envelope: _Envelope | None = _DECODER.decode(line)
            except (msgspec.DecodeError, ValueError, RecursionError):  # not JSON (or not UTF-8), not a usual
                envelope = None  # per-task event, or nested deeper than the stack (the tolerant path counts it)
            if (
                envelope is not None
                and envelope.type in _TASK_EVENTS
                and envelope.type in self._seen_types
                and len(envelope.event) == 1
            ):
                # (the first event of each type takes the tolerant path, which also checks its keys)
                try:
                    if self._fast(envelope.type, next(iter(envelope.event.values()))):
                        continue
                except BadEvent:
                    pass  # checked before anything changed: the tolerant path reads it again and reports it
            try:
                event = orjson.loads(line)
                etype = event.get("type")
                body = event.get("event")
            except (ValueError, AttributeError, RecursionError):  # orjson's JSONDecodeError is a ValueError
                event = etype = body = None
            if etype == "record":  # the Avro schema line
                continue
            payload = _opt(body) if isinstance(body, dict) else None
            if not isinstance(etype, str) or not isinstance(payload, dict):
                self.stats.malformed_lines += 1
                if self.unterminated:
                    self.torn_tail = True
                continue
            try:
                self._event(etype, payload)
            except (BadEvent, KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
                self.stats.malformed_lines += 1
                self._problem_count += 1
                if len(self._problems) < _MAX_LISTED_PROBLEMS:
                    self._problems.append(f"line {self._line_no} ({etype[:80]}): {str(exc)[:200]}")

    def _header(self, line: bytes) -> None:
        head = line.strip()
        if head == HEADER:
            return
        if head.startswith(b"Obj\x01"):
            raise JhistError(f"{self.app.source}: binary Avro job history is not supported (only Avro-Json)")
        if head.startswith(b"{"):
            self.report("no Avro-Json header line; read as events anyway", partial=False)
            self._line_no = 1
            self.feed([line])
            return
        raise JhistError(f"{self.app.source}: not a job-history file (no Avro-Json header)")

    # -- events

    def _event(self, etype: str, e: dict[str, Any]) -> None:
        if etype not in self._seen_types:
            self._seen_types.add(etype)
            self._check_keys(etype, e)
        if etype in _TASK_EVENTS:
            self._task_event(etype, e)
            return
        if etype == "JOB_SUBMITTED":
            self._job_submitted(e)
        elif etype == "JOB_INITED":
            app = self.app
            app.launch_ms = _int(e["launchTime"])
            app.uberized = bool(_opt(e.get("uberized")))
            for kind, key in ((MRPhaseKind.MAP, "totalMaps"), (MRPhaseKind.REDUCE, "totalReduces")):
                total = max(0, _int_or(e.get(key), 0))
                self.declared[kind] = total
                self.phases[kind].reserve(min(total, _MAX_RESERVED_ROWS))  # a false claim must not allocate
        elif etype == "JOB_INFO_CHANGED":
            submit, launch = _int_or(e.get("submitTime"), 0), _int_or(e.get("launchTime"), 0)
            if submit > 0:
                self.app.submit_ms = submit
            if launch > 0:
                self.app.launch_ms = launch
        elif etype == "JOB_FINISHED":
            self._job_end(e, MRJobStatus.SUCCEEDED)
            self.app.counters = _counters_dict(e.get("totalCounters"))
            self.app.map_counters = _counters_dict(e.get("mapCounters"))
            self.app.reduce_counters = _counters_dict(e.get("reduceCounters"))
        elif etype in _JOB_UNSUCCESSFUL:
            status = _text(e.get("jobStatus")).upper() or etype.removeprefix("JOB_")
            self._job_end(e, MRJobStatus.KILLED if status == "KILLED" else MRJobStatus.FAILED)
            diagnostics = _text(e.get("diagnostics"))
            if status == "ERROR" and not diagnostics:
                diagnostics = "the job ended in the ERROR state (an internal error of its ApplicationMaster)"
            self.app.diagnostics = diagnostics[:MAX_DIAGNOSTICS_CHARS]
        elif etype == "AM_STARTED":
            self.app.am_attempts += 1
            self.app.am_host = self.clip.name("host names", _text(e.get("nodeManagerHost")))
        elif etype == "JOB_QUEUE_CHANGED":
            self.app.queue = self.clip.name("queue names", _text(e.get("jobQueueName"))) or self.app.queue
        elif etype == "JOB_PRIORITY_CHANGED":
            self.app.priority = _text(e.get("priority")) or None
        elif etype in _SKIPPED_EVENTS:
            self.stats.skipped_events += 1
            return
        else:
            unknown = self.stats.unknown_events
            name = etype[:80]
            if name not in unknown and len(unknown) >= _MAX_UNKNOWN_NAMES:
                name = "(other)"
            unknown[name] = unknown.get(name, 0) + 1
            return
        self.stats.events += 1

    def _check_keys(self, etype: str, e: dict[str, Any]) -> None:
        known = _KNOWN_KEYS.get(etype)
        if known is None:
            return
        for key in e:
            if key not in known:
                name = f"{etype}.{key}"
                self.stats.unknown_keys[name] = self.stats.unknown_keys.get(name, 0) + 1

    def _phase(self, task_type: Any, task_id: Any) -> _Phase | None:
        kind = _PHASE_OF_TYPE.get(task_type if type(task_type) is str else _text(task_type))
        if kind is None:  # older writers and odd events: the letter in the task id says
            parts = _text(task_id).split("_")
            kind = _PHASE_OF_LETTER.get(parts[-2]) if len(parts) >= 3 else None
        return self.phases[kind] if kind is not None else None

    def _host(self, name: str) -> int:
        if not name:
            return -1
        index = self.hosts.get(name)
        if index is None:
            index = self.hosts[name] = len(self.hosts)
        return index

    def _seen(self, values: np.ndarray[Any, Any], column: int, attempt: tuple[int, str], *, mark: bool) -> bool:
        """Whether this attempt was already seen started (``column`` _STARTED_BITS) or ended; ``mark`` records it."""
        number, attempt_id = attempt
        if 0 <= number <= _MAX_BIT:
            bit = 1 << number
            mask = int(values[column])
            if mark:
                values[column] = mask | bit
            return bool(mask & bit)
        key = (column, attempt_id)
        seen = key in self._high_attempts
        if mark:
            self._high_attempts.add(key)
        return seen

    # -- per-task events: both paths (typed and tolerant) end in these

    def _task_started(self, phase: _Phase, task_id: str, start: int) -> None:
        row = phase.row(task_id)  # before touching phase.data: a new row may reallocate it
        phase.data[row, _C_TASK_START] = start

    def _attempt_started(self, phase: _Phase, task_id: str, attempt_id: str, start: int, tracker: str) -> None:
        attempt = _attempt_number(attempt_id), attempt_id  # checked before a row is made
        row = phase.row(task_id)
        values = phase.data[row]
        if self._seen(values, _STARTED_BITS, attempt, mark=True):
            self.stats.skipped_events += 1  # logged again by a recovering AM
            return
        if self._seen(values, _ENDED_BITS, attempt, mark=False):
            return  # its end came first and counted it
        self.attempt_starts[attempt_id] = (start, self._host(tracker))
        values[_C_ATTEMPTS] += 1

    def _attempt_ended(
        self,
        phase: _Phase,
        task_id: str,
        attempt_id: str,
        *,
        finish: int,
        start_hint: int,
        state: str,
        hostname: str,
        phase_ends: tuple[int, int, int],
        counters: Iterable[tuple[str, str, int]] | None,
        error: str,
    ) -> None:
        attempt = _attempt_number(attempt_id), attempt_id
        row = phase.row(task_id)
        values = phase.data[row]
        if self._seen(values, _ENDED_BITS, attempt, mark=True):
            self.stats.skipped_events += 1  # logged again by a recovering AM
            return
        started = self.attempt_starts.pop(attempt_id, None)
        if started is None:
            values[_C_ATTEMPTS] += 1  # its start event is missing (cut or reordered history)
            start, host = start_hint, -1
        else:
            start, host = started
        succeeded = state == "SUCCEEDED"
        if state == "KILLED":
            values[_C_KILLED] += 1
        elif not succeeded:
            values[_C_FAILED] += 1
        if values[_HAS_SUCCESS]:
            return  # the winning attempt is kept; later ones (killed speculative attempts) only counted
        end_host = self._host(hostname)
        values[_C_ATTEMPT] = attempt[0]
        values[_C_HOST] = end_host if end_host >= 0 else host
        values[_C_START:_TIMES_END] = (  # one write for the adjacent time columns
            start,
            finish,
            max(0, finish - start) if start > 0 and finish > 0 else 0,
            *phase_ends,
        )
        self._counters(values, counters)
        if succeeded:
            values[_HAS_SUCCESS] = 1
        else:
            phase.reason(row, error, replace=True)

    def _counters(self, values: np.ndarray[Any, Any], counters: Iterable[tuple[str, str, int]] | None) -> None:
        sums = [0] * (_HAS_SUCCESS - _FIRST_COUNTER)  # summed in Python, written to the row at once
        seen = False
        for group, name, value in counters or ():
            column = _COUNTER_INDEX.get((group, name))
            if column is not None:
                sums[column - _FIRST_COUNTER] += value
            seen = True
        values[_FIRST_COUNTER:_HAS_SUCCESS] = sums
        values[_C_HAS_COUNTERS] = int(seen)

    def _task_ended(
        self,
        phase: _Phase,
        task_id: str,
        *,
        finish: int,
        succeeded: bool,
        status: str,
        counters: Iterable[tuple[str, str, int]] | None,
        error: str,
    ) -> None:
        row = phase.row(task_id)
        values = phase.data[row]
        values[_C_TASK_FINISH] = finish
        if succeeded:
            values[_C_STATUS] = MRTaskStatus.SUCCEEDED
            if not values[_C_HAS_COUNTERS] and counters is not None:  # the task's counters are its winner's
                self._counters(values, counters)
        else:
            values[_C_STATUS] = MRTaskStatus.KILLED if status.upper() == "KILLED" else MRTaskStatus.FAILED
            phase.reason(row, error.removeprefix(", "), replace=False)

    # -- the typed fast path for per-task events

    def _fast(self, etype: str, b: _TaskEvent) -> bool:
        """Apply one per-task event decoded by msgspec; False when it lacks a value (the tolerant path reports)."""
        phase = self._phase(b.taskType, b.taskid)
        if phase is None:
            return False
        counters = None if b.counters is None else _typed_counters(b.counters)
        if etype in _ATTEMPT_FINISHED or etype in _ATTEMPT_UNSUCCESSFUL:
            if b.finishTime == _ABSENT or not b.attemptId:
                return False
            finished = etype in _ATTEMPT_FINISHED
            state = (b.taskStatus if finished else b.status).upper() or ("SUCCEEDED" if finished else etype[-6:])
            self._attempt_ended(
                phase,
                b.taskid,
                b.attemptId,
                finish=b.finishTime,
                start_hint=max(b.startTime, 0),
                state=state,
                hostname=b.hostname,
                phase_ends=(b.mapFinishTime, b.shuffleFinishTime, b.sortFinishTime),
                counters=counters,
                error=b.error,
            )
        elif etype in _ATTEMPT_STARTED:
            if b.startTime == _ABSENT or not b.attemptId:
                return False
            self._attempt_started(phase, b.taskid, b.attemptId, b.startTime, b.trackerName)
        elif etype == "TASK_STARTED":
            if b.startTime == _ABSENT:
                return False
            self._task_started(phase, b.taskid, b.startTime)
        else:
            self._task_ended(
                phase,
                b.taskid,
                finish=max(b.finishTime, 0),
                succeeded=etype == "TASK_FINISHED",
                status=b.status,
                counters=counters,
                error=b.error,
            )
        self.stats.events += 1
        return True

    # -- the tolerant path: any shape, every value checked

    def _task_event(self, etype: str, e: dict[str, Any]) -> None:
        phase = self._phase(e.get("taskType"), e.get("taskid"))
        if phase is None:
            self.stats.skipped_events += 1  # setup and cleanup tasks of old writers
            return
        task_id = str(e["taskid"])
        counters = _counter_groups(e["counters"]) if "counters" in e else None
        if etype in _ATTEMPT_FINISHED or etype in _ATTEMPT_UNSUCCESSFUL:
            finished = etype in _ATTEMPT_FINISHED
            state = _text(e.get("taskStatus" if finished else "status")).upper()
            self._attempt_ended(
                phase,
                task_id,
                str(e["attemptId"]),
                finish=_int(e["finishTime"]),
                start_hint=max(_int_or(e.get("startTime"), 0), 0),
                state=state or ("SUCCEEDED" if finished else etype[-6:]),
                hostname=_text(e.get("hostname")),
                phase_ends=(
                    _int_or(e.get("mapFinishTime"), 0),
                    _int_or(e.get("shuffleFinishTime"), 0),
                    _int_or(e.get("sortFinishTime"), 0),
                ),
                counters=counters,
                error=_text(e.get("error")),
            )
        elif etype in _ATTEMPT_STARTED:
            start = _int(e["startTime"])
            self._attempt_started(phase, task_id, str(e["attemptId"]), start, _text(e.get("trackerName")))
        elif etype == "TASK_STARTED":
            self._task_started(phase, task_id, _int(e["startTime"]))
        else:
            self._task_ended(
                phase,
                task_id,
                finish=max(_int_or(e.get("finishTime"), 0), 0),
                succeeded=etype == "TASK_FINISHED",
                status=_text(e.get("status")),
                counters=counters,
                error=_text(e.get("error")),
            )
        self.stats.events += 1

    def _job_submitted(self, e: dict[str, Any]) -> None:
        app = self.app
        app.job_id = _text(e.get("jobid")) or app.job_id
        clip = self.clip
        app.name = clip.name("job names", _text(e.get("jobName")))
        app.user = clip.name("user names", _text(e.get("userName")))
        app.queue = clip.name("queue names", _text(e.get("jobQueueName")))
        app.submit_ms = _int(e["submitTime"])
        priority = _text(e.get("priority"))
        if priority:
            app.priority = priority
        for key in ("workflowId", "workflowName", "workflowNodeName", "workflowAdjacencies", "workflowTags"):
            value = _text(e.get(key))
            if value:
                app.workflow[key] = clip.text("workflow fields", value)

    def _job_end(self, e: dict[str, Any], status: MRJobStatus) -> None:
        app = self.app
        app.job_id = app.job_id or _text(e.get("jobid"))
        app.finish_ms = _int(e["finishTime"])
        app.status = status
        self.job_ended = True
        for phase, prefix in ((app.maps, "Maps"), (app.reduces, "Reduces")):
            phase.reported_finished = _opt(e.get(f"finished{prefix}"))
            phase.reported_failed = _opt(e.get(f"failed{prefix}"))
            phase.reported_killed = _opt(e.get(f"killed{prefix}"))
            for attr in ("reported_finished", "reported_failed", "reported_killed"):
                if not isinstance(getattr(phase, attr), int):
                    setattr(phase, attr, None)

    # -- the end

    def _fix_times(self) -> None:
        """Ends before their starts become the start (issue 15 F17), one warning per kind; the job is then partial."""
        fixes = TimingFixes()
        for phase in self.phases.values():
            data = phase.data[: phase.size]
            for start, end, kind in (
                (_C_START, _C_FINISH, "task attempt(s)"),
                (_C_TASK_START, _C_TASK_FINISH, f"{phase.kind.value} task(s)"),
            ):
                backwards = (data[:, start] > 0) & (data[:, end] > 0) & (data[:, end] < data[:, start])
                count = int(np.count_nonzero(backwards))
                if count:
                    fixes.add(f"{kind} ending before they start", count)
                    data[backwards, end] = data[backwards, start]
        app = self.app
        began = app.launch_ms if app.launch_ms is not None else app.submit_ms
        if app.finish_ms is not None and app.finish_ms <= 0:  # no time at all: the job's own end stays unknown
            fixes.add("job(s) with a zero or negative finish time (taken as unknown)")
            app.finish_ms = None
        if began is not None and app.finish_ms is not None and 0 < app.finish_ms < began:
            fixes.add("job(s) ending before they start")
            app.finish_ms = began
        for warning in fixes.warnings():
            self.report(warning, partial=True)

    def finish(self) -> MapReduceApp:
        app = self.app
        stats = self.stats
        if self._line_no == 0:
            return app
        if self._problems:
            more = self._problem_count - len(self._problems)
            self.report(
                f"{self._problem_count} event(s) lacked what the model needs and were skipped: "
                + "; ".join(self._problems)
                + (f"; and {more} more" if more > 0 else ""),
                partial=False,
            )
        if stats.malformed_lines and self._problem_count < stats.malformed_lines:
            self.report(
                f"{stats.malformed_lines - self._problem_count} line(s) are not JSON events; skipped", partial=False
            )
        if self.torn_tail:
            self.report("the last line is cut short: the file was truncated or is still being written", partial=True)
        if not self.job_ended and stats.events:
            self.report(
                "no JOB_FINISHED, JOB_FAILED or JOB_KILLED event: the history ends early (truncated, or the job "
                "is still running); the job is INCOMPLETE",
                partial=True,
            )
        if stats.unknown_events:
            listed = ", ".join(f"{k} x{v}" for k, v in sorted(stats.unknown_events.items()))
            self.report(f"unknown events skipped: {listed}", partial=False)
        app.hosts = [self.clip.name("host names", host) for host in self.hosts]
        self._fix_times()
        for warning in self.clip.warnings():
            self.report(warning, partial=False)
        for kind, phase in self.phases.items():
            model: MRPhase = app.maps if kind is MRPhaseKind.MAP else app.reduces
            model.tasks = phase.columns()
            model.total_tasks = max(self.declared[kind], len(model.tasks))
            if phase.reasons_dropped:
                self.report(
                    f"{phase.reasons_dropped} more {kind.value} failure texts not kept "
                    f"(the first {MAX_REASONS_PER_PHASE} are)",
                    partial=False,
                )
            if len(model.tasks) > self.declared[kind] and self.stats.events and "JOB_INITED" in self._seen_types:
                self.report(
                    f"{len(model.tasks)} {kind.value} tasks in the history but the job declared {self.declared[kind]}",
                    partial=False,
                )
        app.partial = self.partial
        return app


def _name(source: str) -> str:
    return Path(source).name or source
