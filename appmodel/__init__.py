"""The typed, Django-free model of one analyzed application attempt (Spark) or job (MapReduce).

Fetchers build it, heuristics and analyses read it; nothing here imports Django, fetchers or heuristics
(import-linter enforces this). Units are normalized once, by the code that builds the model:
timestamps are epoch milliseconds, durations milliseconds (Spark's nanosecond CPU and shuffle-write
times are converted to float milliseconds), sizes bytes.
"""

from appmodel.mapreduce import (
    COUNTER_COLUMNS,
    MR_TASK_COLUMNS,
    MapReduceApp,
    MRJobStatus,
    MRPhase,
    MRPhaseKind,
    MRTaskColumns,
    MRTaskStatus,
    canonical_group,
    counter_values,
)
from appmodel.spark import (
    TASK_COLUMNS,
    AppStatus,
    Environment,
    Executor,
    Job,
    JobStatus,
    ParseStats,
    SparkApp,
    SqlExecution,
    StageAttempt,
    StageStatus,
    TaskColumns,
    TaskStatus,
)

__all__ = [
    "COUNTER_COLUMNS",
    "MR_TASK_COLUMNS",
    "TASK_COLUMNS",
    "AppStatus",
    "Environment",
    "Executor",
    "Job",
    "JobStatus",
    "MRJobStatus",
    "MRPhase",
    "MRPhaseKind",
    "MRTaskColumns",
    "MRTaskStatus",
    "MapReduceApp",
    "ParseStats",
    "SparkApp",
    "SqlExecution",
    "StageAttempt",
    "StageStatus",
    "TaskColumns",
    "TaskStatus",
    "canonical_group",
    "counter_values",
]
