"""The strict registry of attribution features and the causes they are grouped into.

Every feature the slowdown model may see is declared here once: name, unit, description, tag (``user``: data
and code the job's owner controls; ``system``: machine and cluster), level (job, machine, cluster), the cause
it belongs to, whether it is categorical, and how the model reads it. Unknown names are rejected everywhere
(``FEATURES.check``), so a typo in a column never silently becomes "feature absent".

Absent values are allowed (None/NaN): the model reads an absent value as "as usual for the template", so an
absent feature can never be blamed.

Input of :func:`feature_row`: a plain mapping whose keys are the feature names below (the DB side maps an
app's stored metrics onto them). Bytes are bytes, times seconds, shares fractions in [0, 1], memory MiB.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

# The pickled model's format: bump when an older AttributionModel can no longer be loaded and used (retrain then).
# 2 (issue 16): successful tasks, host evidence from the run's own tasks, driver idle time, calibrated High.
FORMAT_VERSION = 2

Tag = Literal["user", "system"]
Level = Literal["job", "machine", "cluster"]
# log1p: extensive quantities (bytes, counts, seconds) whose effect is multiplicative; raw: shares and ratios.
Transform = Literal["log1p", "raw"]
# "higher": a higher value can only make a run slower (more data, more failures, more waiting); "either": a change
# either way may (settings, shape, categories). Explanations use it to refuse a cause whose values all went the
# harmless way (analysis.attribution.explain).
Direction = Literal["higher", "either"]


class FeatureError(ValueError):
    """An unknown or malformed feature name or value."""


@dataclass(frozen=True, slots=True)
class Cause:
    code: str
    label: str
    tag: Tag
    description: str


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    unit: str
    description: str
    tag: Tag
    level: Level
    cause: str
    categorical: bool = False
    transform: Transform = "raw"
    # Part of the template's "signature" (data size and stage shape) used to find similar templates.
    signature: bool = False
    # Smallest meaningful change (1 for counters): floors the robust spread so one failure is not a 50-sigma
    # event. Settings (executors, cores, memory) have none: any change of a usually constant setting is news.
    quantum: float = 0.0
    direction: Direction = "either"


CAUSES: dict[str, Cause] = {
    c.code: c
    for c in (
        Cause("data_volume", "More data", "user", "The job read, shuffled, spilled or wrote more than usual."),
        Cause("skew", "Data skew", "user", "A few tasks got much more data than the rest."),
        Cause("code", "Job shape changed", "user", "Different stages, job type or submitter than usual."),
        Cause("config", "Resources and settings", "user", "Executors, cores, memory or version differ from usual."),
        Cause("memory_gc", "Memory pressure / GC", "system", "More of the task time went to garbage collection."),
        Cause(
            "host_health",
            "Slow or failing hosts",
            "system",
            "Tasks on some hosts ran slower than their siblings without more data, or executors were lost.",
        ),
        Cause("contention", "Cluster contention", "system", "The job waited for resources or shared a busy cluster."),
        Cause("failures", "Task failures and retries", "system", "More tasks failed, were killed or re-run."),
        Cause(
            "driver",
            "Driver / code outside Spark",
            "user",
            "More wall time with no stage running: driver-side work, collecting results, code outside Spark.",
        ),
    )
}

_GB = "bytes"


def _f(
    name: str,
    unit: str,
    description: str,
    tag: Tag,
    level: Level,
    cause: str,
    *,
    categorical: bool = False,
    transform: Transform = "raw",
    signature: bool = False,
    quantum: float = 0.0,
) -> Feature:
    direction: Direction = "either" if categorical or cause in ("code", "config") else "higher"
    return Feature(name, unit, description, tag, level, cause, categorical, transform, signature, quantum, direction)


_FEATURES: tuple[Feature, ...] = (
    # job level
    _f("input_bytes", _GB, "Bytes read from storage", "user", "job", "data_volume", transform="log1p", signature=True),
    _f("output_bytes", _GB, "Bytes written to storage", "user", "job", "data_volume", transform="log1p"),
    _f(
        "shuffle_read_bytes", _GB, "Shuffle bytes read", "user", "job", "data_volume", transform="log1p", signature=True
    ),
    _f("shuffle_write_bytes", _GB, "Shuffle bytes written", "user", "job", "data_volume", transform="log1p"),
    _f("spill_bytes", _GB, "Memory + disk bytes spilled", "user", "job", "data_volume", transform="log1p"),
    # Successful tasks only: failed and killed attempts are the failures cause's (a run with 22 retried failures
    # was blamed on "More data" when this counted attempts; issue 16).
    _f(
        "num_tasks",
        "tasks",
        "Successful tasks (failed and killed attempts not counted)",
        "user",
        "job",
        "data_volume",
        transform="log1p",
        signature=True,
        quantum=1,
    ),
    _f(
        "num_stages",
        "stages",
        "Stages (MapReduce: 2)",
        "user",
        "job",
        "code",
        transform="log1p",
        signature=True,
        quantum=1,
    ),
    _f("job_type", "", "Job type (spark, mapreduce, sql, ...)", "user", "job", "code", categorical=True),
    _f("user", "", "Submitting user", "user", "job", "code", categorical=True),
    _f(
        "num_executors",
        "executors",
        "Executors (containers) used",
        "user",
        "job",
        "config",
        transform="log1p",
        signature=True,
    ),
    _f("executor_cores", "cores", "Cores per executor", "user", "job", "config", signature=True),
    _f("executor_memory_mb", "MiB", "Memory per executor", "user", "job", "config", transform="log1p"),
    _f("driver_memory_mb", "MiB", "Driver (AM) memory", "user", "job", "config", transform="log1p"),
    _f("task_input_skew", "ratio", "Max / median task input in the heaviest stage", "user", "job", "skew"),
    # Duration skew the bytes explain is data skew (task_input_skew moves with it); the rest is host evidence: a
    # slow host stretches some tasks' durations without giving them more data (issue 16).
    _f(
        "duration_skew_excess",
        "ratio",
        "Task duration skew not explained by input skew: (max / median duration) / max(1, max / median input)",
        "system",
        "machine",
        "host_health",
        quantum=0.05,
    ),
    _f("failed_tasks", "tasks", "Failed task attempts", "system", "job", "failures", transform="log1p", quantum=1),
    _f("killed_tasks", "tasks", "Killed task attempts", "system", "job", "failures", transform="log1p", quantum=1),
    _f(
        "speculative_tasks",
        "tasks",
        "Speculative task attempts",
        "system",
        "job",
        "failures",
        transform="log1p",
        quantum=1,
    ),
    # machine level
    _f("gc_time_share", "share", "JVM GC time / executor run time", "system", "machine", "memory_gc", quantum=0.005),
    _f(
        "fetch_wait_share",
        "share",
        "Shuffle fetch wait / executor run time",
        "system",
        "machine",
        "host_health",
        quantum=0.005,
    ),
    _f(
        "straggler_task_share",
        "share",
        "Task time on hosts ranked stragglers",
        "system",
        "machine",
        "host_health",
        quantum=0.005,
    ),
    _f(
        "slow_host_task_share",
        "share",
        "Task time on hosts whose tasks ran >= 1.3x their stage's median (from this run's own tasks)",
        "system",
        "machine",
        "host_health",
        quantum=0.02,
    ),
    _f(
        "host_cpu_ratio_spread",
        "ratio",
        "Highest minus lowest per-host CPU time / run time of the tasks",
        "system",
        "machine",
        "host_health",
        quantum=0.02,
    ),
    _f(
        "driver_idle_s",
        "s",
        "Wall time after the first stage with no stage running",
        "user",
        "job",
        "driver",
        transform="log1p",
        quantum=1,
    ),
    _f("host_count", "hosts", "Distinct hosts that ran tasks", "system", "machine", "config", transform="log1p"),
    # cluster level
    _f(
        "queue_wait_s",
        "s",
        "Delay from submission to the first task",
        "system",
        "cluster",
        "contention",
        transform="log1p",
        quantum=1,
    ),
    _f(
        "concurrent_apps",
        "apps",
        "Apps running on the cluster at the same time",
        "system",
        "cluster",
        "contention",
        transform="log1p",
        quantum=1,
    ),
    _f("queue", "", "Scheduler queue", "system", "cluster", "contention", categorical=True),
    _f(
        "executors_lost",
        "executors",
        "Executors lost (host failures, preemption)",
        "system",
        "cluster",
        "host_health",
        transform="log1p",
        quantum=1,
    ),
    _f("framework_version", "", "Spark / Hadoop version", "system", "cluster", "config", categorical=True),
)


class FeatureRegistry:
    """Features by name, in declaration order (the model's column order). Unknown names raise FeatureError."""

    def __init__(self, features: Iterable[Feature]) -> None:
        self._by_name: dict[str, Feature] = {}
        for f in features:
            if f.name in self._by_name:
                raise FeatureError(f"duplicate feature {f.name!r}")
            if f.cause not in CAUSES:
                raise FeatureError(f"feature {f.name!r}: unknown cause {f.cause!r}")
            if f.categorical and f.transform != "raw":
                raise FeatureError(f"feature {f.name!r}: a categorical feature takes no transform")
            self._by_name[f.name] = f

    def __getitem__(self, name: str) -> Feature:
        try:
            return self._by_name[name]
        except KeyError:
            raise FeatureError(f"unknown feature {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Feature]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def check(self, names: Iterable[str]) -> list[str]:
        """The given names in registry order; raises FeatureError naming every unknown one."""
        given = list(names)
        unknown = sorted(n for n in given if n not in self._by_name)
        if unknown:
            raise FeatureError(f"unknown feature(s): {', '.join(map(repr, unknown))}")
        wanted = set(given)
        return [n for n in self._by_name if n in wanted]

    def by_cause(self, names: Iterable[str] | None = None) -> dict[str, list[str]]:
        """Cause code -> member feature names (only causes with at least one of ``names``)."""
        pool = self.names if names is None else self.check(names)
        out: dict[str, list[str]] = {}
        for n in pool:
            out.setdefault(self._by_name[n].cause, []).append(n)
        return out


FEATURES = FeatureRegistry(_FEATURES)


def feature_row(metrics: Mapping[str, object], *, registry: FeatureRegistry = FEATURES) -> dict[str, float | str]:
    """One app's feature row from a plain dict keyed by feature name.

    Unknown keys raise FeatureError. Missing or None values become NaN (numeric) or "" (categorical): absent.
    Numeric values must be finite numbers >= 0; categorical values are kept as strings.
    """
    registry.check(metrics.keys())
    row: dict[str, float | str] = {}
    for f in registry:
        value = metrics.get(f.name)
        if f.categorical:
            row[f.name] = "" if value is None else str(value)
            continue
        if value is None:
            row[f.name] = math.nan
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FeatureError(f"feature {f.name!r}: expected a number, got {type(value).__name__}")
        x = float(value)
        if not math.isfinite(x) or x < 0:
            raise FeatureError(f"feature {f.name!r}: expected a finite number >= 0, got {value!r}")
        row[f.name] = x
    return row
