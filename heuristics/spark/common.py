"""Shared Spark helpers: executor roll-ups, what a score counts, local mode, size-valued properties."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from appmodel.formatting import format_bytes, format_duration, setting_size
from appmodel.spark import Executor, SparkApp, StageAttempt
from appmodel.units import MIB, PIB, parse_size
from heuristics.base import Change
from heuristics.changes import partitions_for, suggested_memory
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


# ---- changes: partitions, skew and memory settings computed from the app (heuristics.changes has the formulas) --


def stage_is_sql(app: SparkApp, stage: StageAttempt) -> bool:
    """Whether a stage ran for a SQL / DataFrame query (one of its jobs has a SQL execution id)."""
    return any(
        (job := app.jobs.get(job_id)) is not None and job.sql_execution_id is not None for job_id in stage.job_ids
    ) or any(stage.stage_id in job.stage_ids and job.sql_execution_id is not None for job in app.jobs.values())


def adaptive_enabled(app: SparkApp) -> bool:
    """spark.sql.adaptive.enabled as the app ran: set, else Spark's default (on from 3.2)."""
    value = conf_bool(app, "spark.sql.adaptive.enabled")
    return spark_version_at_least(app, 3, 2) if value is None else value


def coalescing_enabled(app: SparkApp) -> bool:
    """Whether AQE coalesced shuffle partitions: AQE on and spark.sql.adaptive.coalescePartitions.enabled not off."""
    return adaptive_enabled(app) and conf_bool(app, "spark.sql.adaptive.coalescePartitions.enabled") is not False


def skew_join_enabled(app: SparkApp) -> bool:
    """Whether AQE split skewed join partitions: AQE on and spark.sql.adaptive.skewJoin.enabled not off."""
    return adaptive_enabled(app) and conf_bool(app, "spark.sql.adaptive.skewJoin.enabled") is not False


def target_partition_bytes(app: SparkApp, default_mib: float) -> tuple[int, str]:
    """The partition size to aim for and where it comes from: the app's own
    spark.sql.adaptive.advisoryPartitionSizeInBytes when set (a bare number is bytes), else ``default_mib``."""
    advisory = conf_bytes(app, "spark.sql.adaptive.advisoryPartitionSizeInBytes", [], default_unit="b")
    if advisory is not None and advisory > 0:
        return advisory, "the app's spark.sql.adaptive.advisoryPartitionSizeInBytes"
    return max(1, int(min(default_mib * MIB, PIB))), "the target partition size"  # infinity: one partition


def stage_label(stage: StageAttempt) -> str:
    return f"stage {stage.stage_id}" + (f".{stage.attempt_id}" if stage.attempt_id else "")


def stage_data_bytes(stage: StageAttempt) -> tuple[float, str]:
    """The data a stage's partitions hold, over its successful tasks, and what it is: the shuffle data it read,
    else its input, else what it wrote (shuffle or output: a stage that generated its data)."""
    tasks = stage.tasks
    ok = tasks.succeeded
    for kind, values in (
        ("shuffle", tasks.shuffle_read_bytes),
        ("input", tasks.input_bytes),
        ("written", np.maximum(tasks.shuffle_write_bytes, tasks.output_bytes)),
    ):
        total = float(values[ok].sum())
        if total > 0:
            return total, kind
    return 0.0, ""


def partition_changes(app: SparkApp, stage: StageAttempt, default_target_mib: float, *, more: bool) -> list[Change]:
    """The partition count that gives ``stage`` partitions of the target size, when it goes the way asked
    (``more`` partitions, or fewer); none otherwise.

    N = ceil(the stage's data / target) (data: shuffle read, else input, else written, see ``stage_data_bytes``).
    SQL stages that read shuffle data: spark.sql.shuffle.partitions = N, and AQE coalescing turned on when it was
    off; SQL stages that read files: spark.sql.files.maxPartitionBytes = the target (Spark cuts files into
    partitions of that size); other stages (RDD code, or generated data): repartition(N) or coalesce(N) of the
    named stage.
    """
    target, source = target_partition_bytes(app, default_target_mib)
    data, kind = stage_data_bytes(stage)
    if data <= 0:
        return []
    count = partitions_for(data, target)
    tasks = stage_tasks_counted(stage)
    if (count <= tasks) if more else (count >= tasks):
        return []
    where = f"{format_bytes(data)} of {kind} data in {stage_label(stage)}"
    reason = f"{where} / {format_bytes(target)} ({source}) = {count} partitions (it had {tasks})"
    sql = stage_is_sql(app, stage)
    if sql and kind == "shuffle":
        changes = [Change("spark.sql.shuffle.partitions", str(count), reason)]
        if not adaptive_enabled(app):
            changes.append(Change("spark.sql.adaptive.enabled", "true", "AQE was off: let Spark size each shuffle"))
        if not coalescing_enabled(app):
            changes.append(
                Change(
                    "spark.sql.adaptive.coalescePartitions.enabled",
                    "true",
                    f"AQE coalescing was off: Spark then merges small shuffle partitions up to {format_bytes(target)}",
                )
            )
        return changes
    if sql and kind == "input":
        return [Change("spark.sql.files.maxPartitionBytes", setting_size(target), reason)]
    verb = "repartition" if more else "coalesce"
    return [Change(f"{verb} {stage_label(stage)}", f"{verb}({count})", reason)]


def skew_changes(app: SparkApp, stage: StageAttempt, hot_bytes: float) -> list[Change]:
    """What spreads a skewed stage: for a SQL stage with AQE or its skew join off, turning them on; otherwise
    salting the stage's hot key (a code change, named with the hot task's bytes)."""
    if stage_is_sql(app, stage) and not skew_join_enabled(app):
        reason = f"{stage_label(stage)} is a SQL stage whose largest task read {format_bytes(hot_bytes)}"
        changes = []
        if not adaptive_enabled(app):
            changes.append(Change("spark.sql.adaptive.enabled", "true", f"{reason}; AQE was off"))
        changes.append(
            Change("spark.sql.adaptive.skewJoin.enabled", "true", f"{reason}; AQE splits skewed join partitions")
        )
        return changes
    return [
        Change(
            f"salt the key of {stage_label(stage)}",
            f"hot task read {format_bytes(hot_bytes)}",
            "add a random salt to the hot key (then aggregate twice) so its rows spread over many tasks",
        )
    ]


def memory_key(app: SparkApp) -> str:
    """The property that sizes the JVMs running tasks: the driver's in local mode, else the executors'."""
    return "spark.driver.memory" if local_mode(app) else "spark.executor.memory"


RESERVED_MEMORY = 300 * MIB  # Spark's reserved heap, outside the unified region
DEFAULT_MEMORY_FRACTION = 0.6  # spark.memory.fraction's default


def executor_cores(app: SparkApp) -> int:
    """Cores per executor: spark.executor.cores, else the most any task executor logged; 1 when unknown."""
    configured = conf_int(app, "spark.executor.cores", [])
    if configured and configured > 0 and not local_mode(app):
        return configured
    return max((e.cores for e in task_executors(app)), default=1) or 1


def memory_per_task_changes(app: SparkApp, needed_per_task: float, why: str) -> list[Change]:
    """Give each concurrent task ``needed_per_task`` bytes of execution memory, the cheapest way.

    Each task gets (heap - 300 MiB) x spark.memory.fraction / cores. Fewer cores per executor first: cores =
    floor(that region / need), when at least 1 and fewer than now (the same containers, fewer tasks sharing
    each); else spark.executor.memory = need x cores / fraction + 300 MiB, rounded up to the allocation step and
    above the current heap.
    """
    if needed_per_task <= 0:
        return []
    key = memory_key(app)
    heap = conf_bytes(app, key, []) or parse_size("1g", "m")
    fraction = conf_float(app, "spark.memory.fraction", []) or DEFAULT_MEMORY_FRACTION
    cores = executor_cores(app)
    region = max(heap - RESERVED_MEMORY, 0) * fraction
    per_task = region / cores
    reason = f"{why}: {format_bytes(needed_per_task)} per task, {format_bytes(per_task)} per task now"
    fits = int(region // needed_per_task)
    if 1 <= fits < cores and not local_mode(app):
        return [Change("spark.executor.cores", str(fits), f"{reason} ({cores} cores share {format_bytes(region)})")]
    memory = suggested_memory(needed_per_task * cores / fraction + RESERVED_MEMORY, above=heap)
    detail = f"{format_bytes(needed_per_task)} x {cores} cores / {fraction:g} + 300 MiB"
    return [Change(key, setting_size(memory), f"{reason}; {detail}")]


def dynamic_allocation_changes(app: SparkApp, why: str) -> list[Change]:
    """Turn dynamic allocation on, so executors with nothing to run are released; with shuffle tracking when
    there is no external shuffle service (Spark 3.0 to 3.5; on by default from 4.0), or released executors would
    take their shuffle files with them. None when it was already on or in local mode (one JVM)."""
    if local_mode(app) or conf_bool(app, "spark.dynamicAllocation.enabled"):
        return []
    changes = [Change("spark.dynamicAllocation.enabled", "true", why)]
    tracking = conf_bool(app, "spark.dynamicAllocation.shuffleTracking.enabled")
    service = conf_bool(app, "spark.shuffle.service.enabled")
    if not service and not tracking and spark_version_at_least(app, 3, 0) and not spark_version_at_least(app, 4, 0):
        changes.append(
            Change(
                "spark.dynamicAllocation.shuffleTracking.enabled",
                "true",
                "no external shuffle service: keep executors that hold shuffle data",
            )
        )
    return changes
