"""The job-history event vocabulary: which events and keys Hadoop writes, the typed decoder of the per-task
events, and the coercion of Avro values (bare or union-wrapped) into what the model holds.

Its underscore names are the internals of ``fetchers.jhist``, shared with ``fetchers.jhist.builder`` only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Final

import msgspec

from appmodel.mapreduce import Counters, MRPhaseKind, canonical_group

_ATTEMPT_STARTED: Final = frozenset({"MAP_ATTEMPT_STARTED", "REDUCE_ATTEMPT_STARTED"})
_ATTEMPT_FINISHED: Final = frozenset({"MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED"})
_ATTEMPT_UNSUCCESSFUL: Final = frozenset(
    {"MAP_ATTEMPT_FAILED", "MAP_ATTEMPT_KILLED", "REDUCE_ATTEMPT_FAILED", "REDUCE_ATTEMPT_KILLED"}
)
_JOB_UNSUCCESSFUL: Final = frozenset({"JOB_FAILED", "JOB_KILLED", "JOB_ERROR"})
_TASK_EVENTS: Final = frozenset(
    {"TASK_STARTED", "TASK_FINISHED", "TASK_FAILED", *_ATTEMPT_STARTED, *_ATTEMPT_FINISHED, *_ATTEMPT_UNSUCCESSFUL}
)
_SKIPPED_EVENTS: Final = frozenset(
    {
        "TASK_UPDATED",
        "NORMALIZED_RESOURCE",
        "JOB_STATUS_CHANGED",
        *(
            f"{kind}_ATTEMPT_{what}"
            for kind in ("SETUP", "CLEANUP")
            for what in ("STARTED", "FINISHED", "FAILED", "KILLED")
        ),
    }
)
_PHASE_OF_TYPE: Final = {"MAP": MRPhaseKind.MAP, "REDUCE": MRPhaseKind.REDUCE}
_PHASE_OF_LETTER: Final = {"m": MRPhaseKind.MAP, "r": MRPhaseKind.REDUCE}

# Keys each event may carry, across Hadoop 0.23 to 3.x; anything else is counted in ParseStats.unknown_keys
# (checked on the first event of each type: a writer's schema does not change within a file).
_ATTEMPT_END_KEYS: Final = frozenset(
    {
        "taskid",
        "attemptId",
        "taskType",
        "taskStatus",
        "finishTime",
        "hostname",
        "port",
        "rackname",
        "state",
        "counters",
        "clockSplits",
        "cpuUsages",
        "vMemKbytes",
        "physMemKbytes",
        "startTime",
    }
)
_KNOWN_KEYS: Final[dict[str, frozenset[str]]] = {
    "AM_STARTED": frozenset(
        {
            "applicationAttemptId",
            "startTime",
            "containerId",
            "nodeManagerHost",
            "nodeManagerPort",
            "nodeManagerHttpPort",
        }
    ),
    "JOB_SUBMITTED": frozenset(
        {
            "jobid",
            "jobName",
            "userName",
            "submitTime",
            "jobConfPath",
            "acls",
            "jobQueueName",
            "workflowId",
            "workflowName",
            "workflowNodeName",
            "workflowAdjacencies",
            "workflowTags",
            "priority",
        }
    ),
    "JOB_INITED": frozenset({"jobid", "launchTime", "totalMaps", "totalReduces", "jobStatus", "uberized"}),
    "JOB_INFO_CHANGED": frozenset({"jobid", "submitTime", "launchTime"}),
    "JOB_QUEUE_CHANGED": frozenset({"jobid", "jobQueueName"}),
    "JOB_PRIORITY_CHANGED": frozenset({"jobid", "priority"}),
    "JOB_FINISHED": frozenset(
        {
            "jobid",
            "finishTime",
            "finishedMaps",
            "finishedReduces",
            "failedMaps",
            "failedReduces",
            "killedMaps",
            "killedReduces",
            "totalCounters",
            "mapCounters",
            "reduceCounters",
        }
    ),
    "TASK_STARTED": frozenset({"taskid", "taskType", "startTime", "splitLocations"}),
    "TASK_FINISHED": frozenset({"taskid", "taskType", "finishTime", "status", "counters", "successfulAttemptId"}),
    "TASK_FAILED": frozenset(
        {"taskid", "taskType", "finishTime", "error", "failedDueToAttempt", "status", "counters", "startTime"}
    ),
    **{
        name: frozenset(
            {
                "taskid",
                "taskType",
                "attemptId",
                "startTime",
                "trackerName",
                "httpPort",
                "shufflePort",
                "containerId",
                "locality",
                "avataar",
            }
        )
        for name in _ATTEMPT_STARTED
    },
    "MAP_ATTEMPT_FINISHED": _ATTEMPT_END_KEYS | {"mapFinishTime"},
    "REDUCE_ATTEMPT_FINISHED": _ATTEMPT_END_KEYS | {"shuffleFinishTime", "sortFinishTime"},
    **{
        name: frozenset(_ATTEMPT_END_KEYS - {"taskStatus", "state"} | {"status", "error"})
        for name in _ATTEMPT_UNSUCCESSFUL
    },
    **{
        name: frozenset(
            {
                "jobid",
                "finishTime",
                "finishedMaps",
                "finishedReduces",
                "failedMaps",
                "failedReduces",
                "killedMaps",
                "killedReduces",
                "jobStatus",
                "diagnostics",
            }
        )
        for name in _JOB_UNSUCCESSFUL
    },
}


class BadEvent(Exception):
    """An event that lacks what the model needs."""


# Typed fast path (msgspec) for the per-task events, nearly every line of a history: only the fields used are
# declared, everything else (progress splits, display names, ...) is skipped while decoding. A line that does not
# fit (a wrapped union, a missing field, not JSON) goes to the tolerant orjson path, which reads any shape.
_MAX_VALUE: Final = 1 << 60  # larger numbers are junk; bounding them keeps sums inside int64
_ABSENT: Final = -(1 << 62)
_Value = Annotated[int, msgspec.Meta(ge=-_MAX_VALUE, le=_MAX_VALUE)]


class _Count(msgspec.Struct, gc=False):
    name: str
    value: _Value


class _Group(msgspec.Struct, gc=False):
    name: str
    counts: list[_Count]


class _JhCounters(msgspec.Struct, gc=False):
    groups: list[_Group]


class _TaskEvent(msgspec.Struct, gc=False):
    taskid: str
    taskType: str = ""
    attemptId: str = ""
    startTime: _Value = _ABSENT
    finishTime: _Value = _ABSENT
    trackerName: str = ""
    hostname: str = ""
    taskStatus: str = ""
    status: str = ""
    error: str = ""
    mapFinishTime: _Value = 0
    shuffleFinishTime: _Value = 0
    sortFinishTime: _Value = 0
    counters: _JhCounters | None = None


class _Envelope(msgspec.Struct, gc=False):
    type: str
    event: dict[str, _TaskEvent]


_DECODER: Final = msgspec.json.Decoder(_Envelope)


def _typed_counters(counters: _JhCounters) -> Iterator[tuple[str, str, int]]:
    """Lazily: a task's end repeats its winning attempt's counters, which are then not read again."""
    return (
        (canonical_group(group.name), count.name, count.value) for group in counters.groups for count in group.counts
    )


def _id_number(identifier: str, what: str) -> int:
    """The number after the last ``_`` of a task or attempt id (it fits the int32 columns)."""
    try:
        number = int(identifier.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        number = -1
    if not 0 <= number < 1 << 31:
        raise BadEvent(f"not {what} id: {identifier[:100]!r}")
    return number


def _attempt_number(attempt_id: str) -> int:
    return _id_number(attempt_id, "an attempt")


def _opt(value: Any) -> Any:
    """An Avro union value, bare or wrapped ({"string": "x"}); None stays None."""
    if type(value) is dict and len(value) == 1:
        return next(iter(value.values()))
    return value


def _text(value: Any) -> str:
    if type(value) is str:  # the common case first: this runs several times per event
        return value
    value = _opt(value)
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    value = _opt(value)
    if type(value) is not int or not -_MAX_VALUE <= value <= _MAX_VALUE:
        raise BadEvent(f"expected an integer, got {type(value).__name__}")
    return value


def _int_or(value: Any, default: int) -> int:
    value = _opt(value)
    return value if type(value) is int and -_MAX_VALUE <= value <= _MAX_VALUE else default


def _counter_groups(counters: Any) -> Iterator[tuple[str, str, int]]:
    """(canonical group, counter, value) of an Avro JhCounters record; malformed entries are skipped."""
    if not (isinstance(counters, dict) and "groups" in counters):
        counters = _opt(counters)  # a union-wrapped record
    if not isinstance(counters, dict):
        return
    groups = counters.get("groups")
    if not isinstance(groups, list):
        return
    for group in groups:
        if not isinstance(group, dict):
            continue
        name = group.get("name")
        counts = group.get("counts")
        if not isinstance(name, str) or not isinstance(counts, list):
            continue
        canonical = canonical_group(name)
        for count in counts:
            if isinstance(count, dict):
                counter, value = count.get("name"), count.get("value")
                if type(value) is int and type(counter) is str and -_MAX_VALUE <= value <= _MAX_VALUE:
                    yield canonical, counter, value


def _counters_dict(counters: Any) -> Counters:
    result: Counters = {}
    for group, name, value in _counter_groups(counters):
        result.setdefault(group, {})[name] = value
    return result
