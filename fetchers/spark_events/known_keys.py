"""Every key Spark 1.2 to 4.x writes in the events the builder handles: any other key is counted as unknown.

A key counts as known when some Spark version writes it, whether we read it or ignore it on purpose (Accumulables,
Updated Blocks, RDD Info, SQL plan info...). The lists come from the real logs under the reference data (Spark
1.2 to 4.1.1, vendor builds included) and Spark's ``JsonProtocol`` (plus the Jackson-written SQL and exclusion
events) for fields no saved log carries. Objects are named by path: the event's short name, then the keys down
to the object (``SparkListenerTaskEnd.Task Metrics.Input Metrics``); an object not listed here is not checked.
"""

from __future__ import annotations

from typing import Any, Final

# Spark's ExecutorMetricType names (2.4 to 4.x), in the order Spark logs them (Task Executor Metrics,
# Executor Metrics of StageExecutorMetrics).
EXECUTOR_METRICS: Final[tuple[str, ...]] = (
    "JVMHeapMemory",
    "JVMOffHeapMemory",
    "OnHeapExecutionMemory",
    "OffHeapExecutionMemory",
    "OnHeapStorageMemory",
    "OffHeapStorageMemory",
    "OnHeapUnifiedMemory",
    "OffHeapUnifiedMemory",
    "DirectPoolMemory",
    "MappedPoolMemory",
    "ProcessTreeJVMVMemory",
    "ProcessTreeJVMRSSMemory",
    "ProcessTreePythonVMemory",
    "ProcessTreePythonRSSMemory",
    "ProcessTreeOtherVMemory",
    "ProcessTreeOtherRSSMemory",
    "MinorGCCount",
    "MinorGCTime",
    "MajorGCCount",
    "MajorGCTime",
    "TotalGCTime",
    "ConcurrentGCCount",
    "ConcurrentGCTime",
)

_TASK_INFO: Final = frozenset(
    {
        "Task ID",
        "Index",
        "Attempt",
        "Partition ID",
        "Launch Time",
        "Executor ID",
        "Host",
        "Locality",
        "Speculative",
        "Getting Result Time",
        "Finish Time",
        "Failed",
        "Killed",
        "Accumulables",
    }
)
_STAGE_INFO: Final = frozenset(
    {
        "Stage ID",
        "Stage Attempt ID",
        "Attempt ID",  # an early spelling the builder still reads
        "Stage Name",
        "Number of Tasks",
        "RDD Info",
        "Parent IDs",
        "Details",
        "Submission Time",
        "Completion Time",
        "Failure Reason",
        "Accumulables",
        "Resource Profile Id",
        "Shuffle Push Enabled",
        "Shuffle Push Mergers Count",
    }
)
_PUSH_READ: Final = frozenset(
    {
        "Corrupt Merged Block Chunks",
        "Merged Fetch Fallback Count",
        "Merged Fallback Count",  # the spelling of Spark's own hand-edited test log
        "Merged Remote Blocks Fetched",
        "Merged Local Blocks Fetched",
        "Merged Remote Chunks Fetched",
        "Merged Local Chunks Fetched",
        "Merged Remote Bytes Read",
        "Merged Local Bytes Read",
        "Merged Remote Requests Duration",
    }
)
_EXCLUDED: Final = frozenset({"Event", "time", "executorId", "taskFailures"})
_UNEXCLUDED: Final = frozenset({"Event", "time", "executorId"})
_NODE_EXCLUDED: Final = frozenset({"Event", "time", "hostId", "executorFailures"})
_NODE_UNEXCLUDED: Final = frozenset({"Event", "time", "hostId"})
_TASK_END: Final = "SparkListenerTaskEnd"
_TASK_METRICS: Final = f"{_TASK_END}.Task Metrics"

KNOWN_KEYS: Final[dict[str, frozenset[str]]] = {
    "SparkListenerLogStart": frozenset({"Event", "Spark Version"}),
    "SparkListenerApplicationStart": frozenset(
        {"Event", "App Name", "App ID", "Timestamp", "User", "App Attempt ID", "Driver Logs", "Driver Attributes"}
    ),
    "SparkListenerApplicationEnd": frozenset({"Event", "Timestamp", "ExitCode"}),
    "SparkListenerEnvironmentUpdate": frozenset(
        {
            "Event",
            "JVM Information",
            "Spark Properties",
            "Hadoop Properties",
            "System Properties",
            "Metrics Properties",
            "Classpath Entries",
            "Build Properties",
        }
    ),
    "SparkListenerResourceProfileAdded": frozenset(
        {"Event", "Resource Profile Id", "Executor Resource Requests", "Task Resource Requests"}
    ),
    "SparkListenerJobStart": frozenset(
        {"Event", "Job ID", "Submission Time", "Stage Infos", "Stage IDs", "Properties"}
    ),
    "SparkListenerJobEnd": frozenset({"Event", "Job ID", "Completion Time", "Job Result"}),
    "SparkListenerStageSubmitted": frozenset({"Event", "Stage Info", "Properties"}),
    "SparkListenerStageSubmitted.Stage Info": _STAGE_INFO,
    "SparkListenerStageCompleted": frozenset({"Event", "Stage Info"}),
    "SparkListenerStageCompleted.Stage Info": _STAGE_INFO,
    "SparkListenerTaskStart": frozenset({"Event", "Stage ID", "Stage Attempt ID", "Task Info"}),
    "SparkListenerTaskStart.Task Info": _TASK_INFO,
    _TASK_END: frozenset(
        {
            "Event",
            "Stage ID",
            "Stage Attempt ID",
            "Task Type",
            "Task End Reason",
            "Task Info",
            "Task Executor Metrics",
            "Task Metrics",
        }
    ),
    f"{_TASK_END}.Task Info": _TASK_INFO,
    f"{_TASK_END}.Task Executor Metrics": frozenset(EXECUTOR_METRICS),
    _TASK_METRICS: frozenset(
        {
            "Host Name",  # Spark 1.x
            "Executor Deserialize Time",
            "Executor Deserialize CPU Time",
            "Executor Run Time",
            "Executor CPU Time",
            "Peak Execution Memory",
            "Peak On Heap Execution Memory",
            "Peak Off Heap Execution Memory",
            "Result Size",
            "JVM GC Time",
            "Result Serialization Time",
            "Memory Bytes Spilled",
            "Disk Bytes Spilled",
            "Shuffle Read Metrics",
            "Shuffle Write Metrics",
            "Input Metrics",
            "Output Metrics",
            "Updated Blocks",
        }
    ),
    f"{_TASK_METRICS}.Shuffle Read Metrics": frozenset(
        {
            "Remote Blocks Fetched",
            "Local Blocks Fetched",
            "Fetch Wait Time",
            "Fetch Backoff Count",
            "Remote Bytes Read",
            "Remote Bytes Read To Disk",
            "Local Bytes Read",
            "Total Records Read",
            "Remote Requests Duration",
            "Push Based Shuffle",
            "Shuffle Push Read Metrics",
        }
    ),
    f"{_TASK_METRICS}.Shuffle Read Metrics.Push Based Shuffle": _PUSH_READ,
    f"{_TASK_METRICS}.Shuffle Read Metrics.Shuffle Push Read Metrics": _PUSH_READ,
    f"{_TASK_METRICS}.Shuffle Write Metrics": frozenset(
        {"Shuffle Bytes Written", "Shuffle Write Time", "Shuffle Records Written"}
    ),
    f"{_TASK_METRICS}.Input Metrics": frozenset({"Data Read Method", "Bytes Read", "Records Read"}),
    f"{_TASK_METRICS}.Output Metrics": frozenset({"Data Write Method", "Bytes Written", "Records Written"}),
    "SparkListenerExecutorAdded": frozenset({"Event", "Timestamp", "Executor ID", "Executor Info"}),
    "SparkListenerExecutorAdded.Executor Info": frozenset(
        {
            "Host",
            "Total Cores",
            "Log Urls",
            "Attributes",
            "Resources",
            "Resource Profile Id",
            "Registration Time",
            "Request Time",
        }
    ),
    "SparkListenerExecutorRemoved": frozenset({"Event", "Timestamp", "Executor ID", "Removed Reason"}),
    "SparkListenerBlockManagerAdded": frozenset(
        {"Event", "Block Manager ID", "Maximum Memory", "Timestamp", "Maximum Onheap Memory", "Maximum Offheap Memory"}
    ),
    "SparkListenerExecutorMetricsUpdate": frozenset(
        {"Event", "Executor ID", "Metrics Updated", "Executor Metrics Updated"}
    ),
    "SparkListenerStageExecutorMetrics": frozenset(
        {"Event", "Executor ID", "Stage ID", "Stage Attempt ID", "Executor Metrics"}
    ),
    # Written by Jackson from the case classes' fields.
    "SparkListenerSQLExecutionStart": frozenset(
        {
            "Event",
            "executionId",
            "rootExecutionId",
            "description",
            "details",
            "physicalPlanDescription",
            "sparkPlanInfo",
            "time",
            "modifiedConfigs",
            "jobTags",
            "jobGroupId",
        }
    ),
    "SparkListenerSQLExecutionEnd": frozenset({"Event", "executionId", "time", "errorMessage"}),
    "SparkListenerSQLAdaptiveExecutionUpdate": frozenset(
        {"Event", "executionId", "physicalPlanDescription", "sparkPlanInfo"}
    ),
    "SparkListenerExecutorBlacklisted": _EXCLUDED,
    "SparkListenerExecutorExcluded": _EXCLUDED,
    "SparkListenerExecutorUnblacklisted": _UNEXCLUDED,
    "SparkListenerExecutorUnexcluded": _UNEXCLUDED,
    "SparkListenerNodeBlacklisted": _NODE_EXCLUDED,
    "SparkListenerNodeExcluded": _NODE_EXCLUDED,
    "SparkListenerNodeUnblacklisted": _NODE_UNEXCLUDED,
    "SparkListenerNodeUnexcluded": _NODE_UNEXCLUDED,
}

# Path -> {key of a nested object we check: that object's path}, so a check builds no strings for known keys.
_NESTED: Final[dict[str, dict[str, str]]] = {
    path: {key: f"{path}.{key}" for key in keys if f"{path}.{key}" in KNOWN_KEYS} for path, keys in KNOWN_KEYS.items()
}
MAX_UNKNOWN_NAMES: Final = 1000  # a hostile log must not grow the counts without bound
_MAX_NAME_CHARS: Final = 200
OTHER_UNKNOWN_KEYS: Final = "(other unknown keys)"


def count_unknown_keys(event_name: str, event: dict[str, Any], counts: dict[str, int]) -> None:
    """Count in ``counts`` each key of ``event`` (and of the nested objects listed) that Spark does not write.

    Only names are looked at: a known key with an odd value is the handler's business, not an unknown key.
    Events not listed (unknown or ignored on purpose) are not checked.
    """
    if event_name in KNOWN_KEYS:
        _count(event_name, event, counts)


def _count(path: str, obj: dict[str, Any], counts: dict[str, int]) -> None:
    known, nested = KNOWN_KEYS[path], _NESTED[path]
    for key, value in obj.items():
        if key not in known:
            add_count(counts, f"{path}.{key}"[:_MAX_NAME_CHARS], 1)
        elif key in nested and isinstance(value, dict):
            _count(nested[key], value, counts)


def add_count(counts: dict[str, int], name: str, number: int) -> None:
    if name not in counts and len(counts) >= MAX_UNKNOWN_NAMES:
        name = OTHER_UNKNOWN_KEYS
    counts[name] = counts.get(name, 0) + number


def merge_counts(target: dict[str, int], counts: dict[str, int]) -> None:
    for name, number in counts.items():
        add_count(target, name, number)
