"""Shared Spark helpers: executor roll-ups, what a score counts, local mode, size-valued properties."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from appmodel.formatting import format_duration
from appmodel.spark import Executor, SparkApp, StageAttempt
from appmodel.units import parse_size
from heuristics.spark.table import task_table, weighted_bincount

SPARK: tuple[str, ...] = ("spark",)
MIN_MS = 60_000


def executor_sums(app: SparkApp, column: str, *, finished_only: bool = True) -> npt.NDArray[np.float64]:
    """Per executor index (into app.executor_ids), the sum of a task column over all stage attempts."""
    table = task_table(app)
    size = len(app.executor_ids)
    index = table.column("executor")
    values = table.column(column).astype(np.float64)
    keep = (index >= 0) & (index < size)
    if finished_only:
        keep &= table.column("finish_ms") > 0
    return weighted_bincount(index[keep], values[keep], size)[:size]


def executor_maxima(app: SparkApp, column: str) -> npt.NDArray[np.float64]:
    """Per executor index (into app.executor_ids), the largest value of a task column over all stage attempts."""
    table = task_table(app)
    size = len(app.executor_ids)
    index = table.column("executor")
    keep = (index >= 0) & (index < size)
    maxima = np.zeros(size, dtype=np.float64)
    np.maximum.at(maxima, index[keep], table.column(column)[keep].astype(np.float64))
    return maxima


def task_executors(app: SparkApp) -> list[Executor]:
    """Executors that ran tasks (the driver alone in local mode); rebuilt from task columns if none logged."""
    executors = app.task_executors()
    if executors:
        return executors
    seen = np.unique(task_table(app).column("executor")).tolist()
    ids = [app.executor_ids[i] for i in seen if 0 <= i < len(app.executor_ids)]
    return [Executor(executor_id=e) for e in ids]


def local_mode(app: SparkApp) -> bool:
    """Local mode: the driver runs every task. local-cluster[...] has real executors, so it is not."""
    return app.is_local


def executors_counted(app: SparkApp) -> int:
    """How many executors a score counts: in local mode the driver is the one executor."""
    return 1 if local_mode(app) else max(1, len(task_executors(app)))


def stage_tasks_counted(stage: StageAttempt) -> int:
    return max(stage.num_tasks, len(stage.tasks))


def conf_bytes(app: SparkApp, key: str, warnings: list[tuple[str, str]], default_unit: str = "m") -> int | None:
    """A size-valued Spark property in bytes; None when unset; garbage adds a warning detail."""
    raw = app.environment.spark(key)
    if raw is None or not raw.strip():
        return None
    try:
        return parse_size(raw, default_unit)
    except ValueError:
        warnings.append(("Warning", f"{key} = {raw[:80]!r} is not a size; ignored"))
        return None


def conf_int(app: SparkApp, key: str, warnings: list[tuple[str, str]]) -> int | None:
    raw = app.environment.spark(key)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw.strip())
    except ValueError:
        warnings.append(("Warning", f"{key} = {raw[:80]!r} is not a whole number; ignored"))
        return None


def conf_bool(app: SparkApp, key: str) -> bool | None:
    raw = app.environment.spark(key)
    if raw is None:
        return None
    return raw.strip().lower() == "true"


def conf_float(app: SparkApp, key: str, warnings: list[tuple[str, str]]) -> float | None:
    raw = app.environment.spark(key)
    if raw is None or not raw.strip():
        return None
    try:
        return float(raw.strip())
    except ValueError:
        warnings.append(("Warning", f"{key} = {raw[:80]!r} is not a number; ignored"))
        return None


def spark_version_at_least(app: SparkApp, major: int, minor: int = 0) -> bool:
    parts = (app.spark_version or "").split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (ValueError, IndexError):
        return False


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, with x/0 = inf for x > 0 and 0/0 = 0."""
    if denominator == 0:
        return float("inf") if numerator > 0 else 0.0
    return numerator / denominator


def peak(executor: Executor, *names: str) -> int | None:
    """The first of the named peak executor metrics that was sampled (None when none was).

    Zero counts as not sampled: Spark logs all-zero executor metrics on task ends between polls, and a JVM
    that ran tasks never truly peaks at zero heap.
    """
    for name in names:
        value = executor.peak_metrics.get(name)
        if value is not None and value > 0:
            return int(value)
    return None


NO_EXECUTOR_METRICS = (
    "Note",
    "the event log has no executor memory metrics (Spark 3.0+ logs them; for per-stage peaks also set "
    "spark.eventLog.logStageExecutorMetrics=true)",
)


def total_task_ms(app: SparkApp) -> int:
    """Summed duration of every finished task attempt."""
    table = task_table(app)
    return int(table.column("duration_ms")[table.column("finish_ms") > 0].sum())


def too_short_for_memory_advice(app: SparkApp, min_task_time_min: float) -> tuple[str, str] | None:
    """A note when tasks ran too little in total for memory peaks to be trusted or waste to matter."""
    total = total_task_ms(app)
    if total >= min_task_time_min * MIN_MS:
        return None
    return ("Note", f"tasks ran {format_duration(total)} in total: too little for heartbeat-sampled peaks to be judged")
