"""Which executor of this app is odd, and in what? Executor anomaly ranking (Basu, Dunagan, Smith, SysML 2007).

Input: a pandas DataFrame with one row per executor (or host) of one app and one numeric column per metric;
the executor id is the ``executor_id`` column or else the index, an optional ``host`` column is carried, and rows
whose id is ``"driver"`` (or whose optional ``is_driver`` column is true) are dropped. Known metric names
(:data:`FEATURES`, built from the app model by :func:`executor_features`) carry a quantization step; any other
numeric column is used too (quantum 0). NaN means "not measured for this executor".

Model. Each metric is a feature modelled as a univariate Gaussian:

* **peers** (default): for each executor, the mean and variance (ddof=1) of the *other* executors of the app.
  Leaving the executor out matters in small apps: with itself included, an outlier among n executors can never
  score more than sqrt(n-1) standard deviations.
* **reference**: when the app has fewer than ``min_executors`` executors (default 10) and a ``reference`` frame is
  given (executors of the same template's recent runs, with a ``run`` column naming the run), the Gaussian is
  fitted over the reference rows. Each run (and this app) is first divided, feature by feature, by its own median
  executor, so that runs over more or less input compare; values are shown back in this app's units.
  Without a usable reference a small app is still ranked over its peers, with a warning; with fewer than
  3 executors (and no reference) nothing is ranked.

Unit-free likelihoods and a variance floor (algorithms.md §4, measured pitfalls):

* A feature's score is ``-h**2 / 2`` with ``h`` the part of z in the feature's harmful direction
  (``Feature.harm``: more GC, spill, time, failures; fewer tasks, less CPU per run ms), 0 the other way: the
  question is which executor was slower or costlier than its siblings, and an executor with less GC than usual
  (z -5.5 on a 4-executor app against the template's runs, issue 16) is a good one, not the one to look at. It
  is the one-sided Gaussian log-likelihood minus its value at the mean; the raw log-likelihood carries
  ``-log(sigma)``, which depends on the unit, so raw rankings favour large-unit features. Numeric columns this
  module does not know have no known harmful direction and score both ways.
* CPU per run ms (``cpu_time_ms / run_time_ms``) is derived when both are given: low means tasks waited.
* The standard deviation is floored at ``max(s, rel_floor * |mean|, rel_floor * scale, quantum)`` with
  ``rel_floor`` = 0.05, ``scale`` the feature's mean absolute value over all executors and ``quantum`` its
  quantization step (1 for counts and milliseconds): a near-constant feature (a rare failure counter, a metric
  that varies by 0.1%) cannot dominate the ranking.
* Features constant over all executors (and the reference) are excluded; an executor with fewer than
  ``min_features`` (default 4) usable features (non-constant, measured) is left out of the ranking, with the
  reason.

Ranking: executors by the mean score over their usable features, lowest (most anomalous) first; within an
executor, features by score, each with value, mean, std, z and direction. The worst single feature score is
reported too: a mean over ~14 features dilutes a one-feature anomaly (pitfall 5).
"""

from __future__ import annotations

import warnings as python_warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from appmodel.jsonsafe import json_safe
from appmodel.spark import SparkApp, TaskStatus

if TYPE_CHECKING:  # pandas loads only where a frame is built: the per-app analysis path needs none
    import pandas as pd  # type: ignore[import-untyped]

DEFAULT_MIN_EXECUTORS = 10
DEFAULT_MIN_FEATURES = 4
DEFAULT_REL_FLOOR = 0.05
DEFAULT_EXPLAIN_Z = 3.0
RESERVED = ("executor_id", "host", "is_driver", "run")
Model = Literal["peers", "reference", "none"]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    label: str
    quantum: float  # quantization step of the raw metric (1 for counts and ms, 1 byte for sizes)
    source: str  # where it comes from in the app model / summaries
    additive: bool = True  # a total over the executor's tasks: modelled per task (see rank_executors)
    symptom: bool = False  # time that is slow *because of* a resource; ranked after an explaining resource
    # Which way costs: "high" (more GC, spill, time, failures...) or "low" (fewer tasks done, less CPU per run
    # ms). A deviation the other way is a better-than-usual executor: shown, never scored.
    harm: Literal["high", "low"] = "high"


FEATURES: tuple[Feature, ...] = (
    # Fewer tasks than its siblings: the scheduler gave a slow executor less work (more is not a cost: it was free).
    Feature(
        "tasks", "tasks run", 1, "task ends on the executor (ExecutorRow.total_tasks counts starts)", False, harm="low"
    ),
    Feature("failed_tasks", "failed tasks", 1, "TaskStatus FAILED or RESUBMITTED (ExecutorRow.failed_tasks)", False),
    Feature("task_time_ms", "task time", 1, "sum of TaskColumns.duration_ms (total_duration_ms)", symptom=True),
    Feature("run_time_ms", "executor run time", 1, "sum of TaskColumns.executor_run_time_ms", symptom=True),
    Feature("cpu_time_ms", "CPU time", 1, "sum of TaskColumns.executor_cpu_time_ms"),
    Feature("gc_time_ms", "GC time", 1, "sum of TaskColumns.jvm_gc_time_ms (ExecutorRow.total_gc_time_ms)"),
    Feature("deserialize_ms", "task deserialization", 1, "sum of TaskColumns.executor_deserialize_ms"),
    Feature("input_bytes", "input", 1, "sum of TaskColumns.input_bytes (ExecutorRow.total_input_bytes)"),
    Feature("shuffle_read_bytes", "shuffle read", 1, "remote + local shuffle bytes (ExecutorRow.total_shuffle_read)"),
    Feature("shuffle_write_bytes", "shuffle write", 1, "TaskColumns.shuffle_write_bytes (total_shuffle_write)"),
    Feature("fetch_wait_ms", "shuffle fetch wait", 1, "sum of TaskColumns.shuffle_fetch_wait_ms"),
    Feature("memory_spilled_bytes", "memory spill", 1, "sum of TaskColumns.memory_bytes_spilled"),
    Feature("disk_spilled_bytes", "disk spill", 1, "sum of TaskColumns.disk_bytes_spilled"),
    Feature("peak_execution_memory", "peak task memory", 1, "max of TaskColumns.peak_execution_memory", False),
    Feature("jvm_heap_peak_bytes", "peak JVM heap", 1, "Executor.peak_metrics['JVMHeapMemory'] or NaN", False),
)
# Derived in the ranking from two stored features (so old stored rows and references get it too): CPU time per
# ms of executor run time. Low means the tasks waited (I/O, a starved or throttled host), the slow direction.
CPU_SHARE = Feature(
    "cpu_per_run_ms", "CPU per run ms", 0, "cpu_time_ms / run_time_ms (derived)", additive=False, harm="low"
)
FEATURE_BY_NAME = {f.name: f for f in (*FEATURES, CPU_SHARE)}


class ExecutorInputError(ValueError):
    """The executors DataFrame cannot be ranked (no numeric feature columns, duplicate ids)."""


@dataclass(frozen=True, slots=True)
class FeatureScore:
    feature: str
    value: float
    mean: float
    std: float  # after the floor
    z: float
    log_likelihood: float  # -z**2/2 of the harmful part of z: unit-free, 0 at the mean and for a better value
    direction: Literal["high", "low", "typical"]
    harmful: bool = False  # the deviation is in the feature's costly direction (see Feature.harm)


@dataclass(frozen=True, slots=True)
class ExecutorScore:
    executor_id: str
    host: str
    score: float  # mean log-likelihood over the usable features; lower = more anomalous
    worst: float  # the lowest single feature log-likelihood
    n_features: int
    features: list[FeatureScore]  # most anomalous first


@dataclass(frozen=True, slots=True)
class LeftOut:
    executor_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ExecutorRanking:
    model: Model
    executors: list[ExecutorScore]  # most anomalous first
    left_out: list[LeftOut]
    features_used: list[str]
    constant_features: list[str]
    warnings: list[str] = field(default_factory=list)
    params: dict[str, float | int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def executor_feature_records(app: SparkApp) -> list[dict[str, Any]]:
    """One dict per executor of a parsed Spark app (executor_id, host, each feature), as ``executor_features``' rows
    (driver and executors with no task end excluded); numpy only, for the per-app analysis.

    Counted like analysis.summaries.executor_rows: resubmitted task ends carry no metrics.
    """
    n = len(app.executor_ids)
    sums = {f.name: np.zeros(n, np.float64) for f in FEATURES}
    stages = [stage.tasks for stage in app.stages.values() if len(stage.tasks)]
    if stages:
        # One pass over all tasks: bincount per feature (np.add.at per stage took 1.4 s on 1M tasks).
        def cat(column: str) -> npt.NDArray[Any]:
            return np.concatenate([getattr(t, column) for t in stages])

        ex = cat("executor").astype(np.int64)
        known = (ex >= 0) & (ex < n)  # a task whose executor the log never named counts for none
        ex = np.where(known, ex, 0)
        status = cat("status")
        counted = (status != TaskStatus.RESUBMITTED) & known
        failed = (status == TaskStatus.FAILED) | (status == TaskStatus.RESUBMITTED)
        sums["tasks"] = np.bincount(ex, weights=known.astype(np.float64), minlength=n)[:n].astype(np.float64)
        sums["failed_tasks"] = np.bincount(ex, weights=(failed & known).astype(np.float64), minlength=n)[:n].astype(
            np.float64
        )
        duration = np.where(known, cat("duration_ms"), 0).astype(np.float64)
        sums["task_time_ms"] = np.bincount(ex, weights=duration, minlength=n)[:n].astype(np.float64)
        ec = ex[counted]
        for name, column in (
            ("run_time_ms", "executor_run_time_ms"),
            ("cpu_time_ms", "executor_cpu_time_ms"),
            ("gc_time_ms", "jvm_gc_time_ms"),
            ("deserialize_ms", "executor_deserialize_ms"),
            ("input_bytes", "input_bytes"),
            ("shuffle_read_bytes", "shuffle_read_bytes"),
            ("shuffle_write_bytes", "shuffle_write_bytes"),
            ("fetch_wait_ms", "shuffle_fetch_wait_ms"),
            ("memory_spilled_bytes", "memory_bytes_spilled"),
            ("disk_spilled_bytes", "disk_bytes_spilled"),
        ):
            weights = cat(column)[counted].astype(np.float64)
            sums[name] = np.bincount(ec, weights=weights, minlength=n)[:n].astype(np.float64)
        np.maximum.at(sums["peak_execution_memory"], ec, cat("peak_execution_memory")[counted].astype(np.float64))
    rows = []
    for i, executor_id in enumerate(app.executor_ids):
        info = app.executors.get(executor_id)
        if executor_id == "driver" or sums["tasks"][i] == 0:
            continue
        row: dict[str, Any] = {"executor_id": executor_id, "host": info.host if info else ""}
        row.update({name: float(values[i]) for name, values in sums.items()})
        heap = info.peak_metrics.get("JVMHeapMemory") if info else None
        row["jvm_heap_peak_bytes"] = float(heap) if heap is not None else np.nan
        rows.append(row)
    return rows


def executor_features(app: SparkApp) -> pd.DataFrame:
    """The per-executor feature frame of a parsed Spark app (driver and executors with no task end excluded).

    Counted like analysis.summaries.executor_rows: resubmitted task ends carry no metrics.
    """
    import pandas as pd

    columns = ["executor_id", "host", *(f.name for f in FEATURES)]
    frame = pd.DataFrame(executor_feature_records(app), columns=columns)
    return frame.astype({f.name: np.float64 for f in FEATURES})


def _per_task(values: FloatArray, names: list[str]) -> FloatArray:
    tasks = values[:, [names.index("tasks")]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tasks > 0, values / np.where(tasks > 0, tasks, 1.0), np.nan)


def _harm_sign(name: str) -> int:
    known = FEATURE_BY_NAME.get(name)
    if known is None:
        return 0
    return 1 if known.harm == "high" else -1


def _with_cpu_share(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """``frame`` with CPU per run ms when it has CPU and run time (a copy; the caller's frame is not changed)."""
    if "cpu_time_ms" not in names or "run_time_ms" not in names or CPU_SHARE.name in names:
        return frame
    if "cpu_time_ms" not in frame.columns or "run_time_ms" not in frame.columns:
        return frame
    cpu = frame["cpu_time_ms"].to_numpy(np.float64, na_value=np.nan)
    run = frame["run_time_ms"].to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(run > 0, cpu / np.where(run > 0, run, 1.0), np.nan)
    return frame.assign(**{CPU_SHARE.name: share})


def _numeric_features(frame: pd.DataFrame) -> list[str]:
    import pandas as pd

    return [str(c) for c in frame.columns if c not in RESERVED and pd.api.types.is_numeric_dtype(frame[c])]


def _ids(frame: pd.DataFrame) -> list[str]:
    if "executor_id" in frame.columns:
        return [str(x) for x in frame["executor_id"]]
    return [str(x) for x in frame.index]


def _loo_moments(values: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Leave-one-out mean, variance (ddof=1) and peer count per cell; NaN cells are neither scored nor peers."""
    present = ~np.isnan(values)
    count = present.sum(axis=0).astype(np.float64)
    centre = np.nanmean(np.where(present.any(axis=0), values, 0.0), axis=0)
    c = np.where(present, values - centre, 0.0)  # centred first: byte counts squared would lose precision
    s1, s2 = c.sum(axis=0), (c * c).sum(axis=0)
    peers = count - present  # per cell: the other executors measured
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (s1 - c) / peers
        var = (s2 - c * c - peers * m * m) / (peers - 1)
    return m + centre, np.maximum(var, 0.0), peers


def _median_scale(values: FloatArray) -> FloatArray:
    """Per feature: the median executor, else the mean, else 1 (a feature that is mostly zero)."""
    med = np.nanmedian(values, axis=0) if values.size else np.ones(values.shape[1])
    mean = np.nanmean(np.abs(values), axis=0) if values.size else np.ones(values.shape[1])
    scale = np.where(med > 0, med, np.where(mean > 0, mean, 1.0))
    return np.asarray(np.nan_to_num(scale, nan=1.0), dtype=np.float64)


def rank_executors(
    frame: pd.DataFrame,
    *,
    reference: pd.DataFrame | None = None,
    min_executors: int = DEFAULT_MIN_EXECUTORS,
    min_features: int = DEFAULT_MIN_FEATURES,
    rel_floor: float = DEFAULT_REL_FLOOR,
    per_task: bool = True,
    explain_z: float = DEFAULT_EXPLAIN_Z,
) -> ExecutorRanking:
    """Rank the executors of one app, most anomalous first (see the module docstring for the model)."""
    with python_warnings.catch_warnings():
        # numpy's "mean of empty slice" for a feature no executor measured (NaN column): it is excluded anyway.
        python_warnings.simplefilter("ignore", RuntimeWarning)
        return _rank_executors(frame, reference, min_executors, min_features, rel_floor, per_task, explain_z)


def _rank_executors(
    frame: pd.DataFrame,
    reference: pd.DataFrame | None,
    min_executors: int,
    min_features: int,
    rel_floor: float,
    per_task: bool,
    explain_z: float,
) -> ExecutorRanking:
    params: dict[str, float | int] = {
        "min_executors": min_executors,
        "min_features": min_features,
        "rel_floor": rel_floor,
        "per_task": int(per_task),
        "explain_z": explain_z,
    }
    drivers = np.array([i == "driver" for i in _ids(frame)], dtype=bool)
    if "is_driver" in frame.columns:
        drivers |= frame["is_driver"].fillna(False).astype(bool).to_numpy()
    frame = frame.loc[~drivers]
    if frame.empty:  # e.g. local mode, where every task runs on the driver
        return ExecutorRanking("none", [], [], [], [], ["no executor ran a task (the driver is never ranked)"], params)
    ids = _ids(frame)
    if len(set(ids)) != len(ids):
        raise ExecutorInputError("duplicate executor ids")
    names = _numeric_features(frame)
    if not names:
        raise ExecutorInputError("no numeric feature columns")
    hosts = [str(h) for h in frame["host"]] if "host" in frame.columns else [""] * len(ids)
    frame = _with_cpu_share(frame, names)
    if reference is not None:
        reference = _with_cpu_share(reference, names)
    if CPU_SHARE.name in frame.columns and CPU_SHARE.name not in names:
        names = [*names, CPU_SHARE.name]
    values = frame[names].to_numpy(np.float64, na_value=np.nan, copy=True)
    values[~np.isfinite(values)] = np.nan
    quantum = np.array([FEATURE_BY_NAME[n].quantum if n in FEATURE_BY_NAME else 0.0 for n in names])
    quantum = np.broadcast_to(quantum.astype(np.float64), values.shape).copy()
    symptom = np.array([n in FEATURE_BY_NAME and FEATURE_BY_NAME[n].symptom for n in names], dtype=bool)
    rate_cols = [j for j, n in enumerate(names) if n in FEATURE_BY_NAME and FEATURE_BY_NAME[n].additive]
    per_task = per_task and "tasks" in names and bool(rate_cols)
    if per_task:
        values[:, rate_cols] = _per_task(values, names)[:, rate_cols]
        with np.errstate(invalid="ignore", divide="ignore"):
            quantum[:, rate_cols] /= values[:, [names.index("tasks")]]
    n = len(ids)
    warnings: list[str] = []

    ref_values: FloatArray | None = None
    if reference is not None and n < min_executors:
        usable = [c for c in names if c in reference.columns]
        if len(reference) >= min_executors and usable:
            ref = reference.reindex(columns=[*names, "run"])
            ref_values = ref[names].to_numpy(np.float64, na_value=np.nan, copy=True)
            if per_task:
                ref_values[:, rate_cols] = _per_task(ref_values, names)[:, rate_cols]
            runs = ref["run"].fillna("").astype(str).to_numpy() if "run" in reference.columns else np.zeros(len(ref))
            for run in np.unique(runs):
                rows = runs == run
                ref_values[rows] /= _median_scale(ref_values[rows])
        else:
            warnings.append(f"reference has {len(reference)} executors, fewer than {min_executors}: not used")

    model: Model
    if ref_values is not None:
        model = "reference"
        app_scale = _median_scale(values)
        scaled = values / app_scale
        pooled = np.vstack([ref_values, scaled])
        constant = np.array([np.unique(col[~np.isnan(col)]).size <= 1 for col in pooled.T], dtype=bool)
        mean = np.broadcast_to(np.nanmean(ref_values, axis=0), values.shape) * app_scale
        ref_count = (~np.isnan(ref_values)).sum(axis=0)
        with np.errstate(invalid="ignore"):
            var = np.broadcast_to(np.nanvar(ref_values, axis=0, ddof=1), values.shape) * app_scale**2
        var = np.where(ref_count >= 2, var, np.nan)
        scale = np.nanmean(np.abs(pooled), axis=0) * app_scale
    else:
        if n < 3:
            reason = f"{n} executor(s): too few to compare" + ("" if reference is not None else " and no reference")
            return ExecutorRanking(
                "none",
                [],
                [LeftOut(i, reason) for i in ids],
                [],
                [],
                [*warnings, reason],
                params,
            )
        model = "peers"
        if n < min_executors:
            warnings.append(
                f"only {n} executors (fewer than {min_executors}) and no usable reference: compared to peers"
            )
        constant = np.array([np.unique(col[~np.isnan(col)]).size <= 1 for col in values.T], dtype=bool)
        mean, var, peers = _loo_moments(values)
        var = np.where(peers >= 2, var, np.nan)
        scale = np.nanmean(np.abs(values), axis=0)

    scale = np.nan_to_num(scale, nan=0.0)
    floor = np.maximum.reduce(
        [
            np.broadcast_to(rel_floor * np.abs(mean), values.shape),
            np.broadcast_to(rel_floor * scale, values.shape),
            np.nan_to_num(quantum, nan=0.0),
        ]
    )
    std = np.maximum(np.sqrt(var), floor)
    usable = ~np.isnan(values) & ~np.isnan(var) & ~constant & (std > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(usable, (values - mean) / np.where(std > 0, std, 1.0), np.nan)
    # Signed harm per feature: +1 more is costly, -1 less is costly, 0 unknown (scored both ways).
    sign = np.array([_harm_sign(n) for n in names], dtype=np.float64)
    hz = np.where(sign == 0, np.abs(z), z * sign)  # z in the costly direction; negative = better than usual
    ll = -0.5 * np.square(np.maximum(hz, 0.0))

    ranked: list[ExecutorScore] = []
    left_out: list[LeftOut] = []
    for i, executor_id in enumerate(ids):
        cols = np.flatnonzero(usable[i])
        if cols.size < min_features:
            left_out.append(
                LeftOut(executor_id, f"{cols.size} usable feature(s), fewer than the {min_features} needed")
            )
            continue
        key = ll[i].copy()
        causes = cols[~symptom[cols] & (hz[i, cols] >= explain_z)]
        if causes.size:  # a resource explains the slow time: show the resource first
            best = key[causes].min()
            explained = symptom & (hz[i] > 0)
            key[explained] = np.maximum(key[explained], np.nextafter(best, np.inf))
        # Ties (every harmless feature scores 0) go by the harmful z: a better-than-usual feature comes last.
        order = cols[np.lexsort((-hz[i, cols], symptom[cols], key[cols]))]
        feats = [
            FeatureScore(
                feature=names[j],
                value=float(values[i, j]),
                mean=float(mean[i, j]),
                std=float(std[i, j]),
                z=float(z[i, j]),
                log_likelihood=float(ll[i, j]),
                direction="high" if z[i, j] > 1 else "low" if z[i, j] < -1 else "typical",
                harmful=bool(hz[i, j] > 1),
            )
            for j in order
        ]
        ranked.append(
            ExecutorScore(
                executor_id=executor_id,
                host=hosts[i],
                score=float(ll[i, cols].mean()),
                worst=float(ll[i, cols].min()),
                n_features=int(cols.size),
                features=feats,
            )
        )
    ranked.sort(key=lambda e: (e.score, e.worst, e.executor_id))
    used = [names[j] for j in range(len(names)) if not constant[j]]
    return ExecutorRanking(
        model,
        ranked,
        left_out,
        used,
        [names[j] for j in range(len(names)) if constant[j]],
        warnings,
        params,
    )


# --- What the product stores at analysis time (analysis.pipeline): the feature rows and a per-task sample -------

# Features with a per-task meaning, and the task column each one sums (or maxes): the panel's time series.
SERIES_COLUMNS: dict[str, str] = {
    "task_time_ms": "duration_ms",
    "run_time_ms": "executor_run_time_ms",
    "cpu_time_ms": "executor_cpu_time_ms",
    "gc_time_ms": "jvm_gc_time_ms",
    "deserialize_ms": "executor_deserialize_ms",
    "input_bytes": "input_bytes",
    "shuffle_read_bytes": "shuffle_read_bytes",
    "shuffle_write_bytes": "shuffle_write_bytes",
    "fetch_wait_ms": "shuffle_fetch_wait_ms",
    "memory_spilled_bytes": "memory_bytes_spilled",
    "disk_spilled_bytes": "disk_bytes_spilled",
    "peak_execution_memory": "peak_execution_memory",
}
# About 2,000 tasks draw readably as points and keep the series under ~250 KB of JSON (17 columns at most; a
# feature that is 0 for every sampled task is not stored); every executor keeps its share (stratified_sample).
DEFAULT_SERIES_MAX_TASKS = 2000
_INT64_FLOAT_MAX = float(np.nextafter(2.0**63, 0))  # the largest float that casts to int64
DEFAULT_SERIES_SEED = 7


def feature_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The feature frame as JSON-ready rows (NaN -> None): what is stored and used as another run's reference."""
    return [_json_row(record) for record in frame.to_dict(orient="records")]


def _json_row(record: dict[Any, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key in ("executor_id", "host") and value is not None and not isinstance(value, float | np.floating):
            row[str(key)] = str(value)
        else:  # numbers (NaN and infinities as None), and a missing id (None or NaN) as None
            row[str(key)] = json_safe(value, infinity="null")
    return row


def features_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Stored feature rows back as the frame ``rank_executors`` reads (None -> NaN, missing features -> NaN)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    for name in ("executor_id", "host"):
        frame[name] = frame[name].fillna("").astype(str) if name in frame.columns else ""
    for f in FEATURES:
        frame[f.name] = pd.to_numeric(frame[f.name], errors="coerce") if f.name in frame.columns else np.nan
    carried = [c for c in ("is_driver", "run") if c in frame.columns]
    extra = [c for c in frame.columns if c not in RESERVED and c not in FEATURE_BY_NAME]
    return frame[["executor_id", "host", *carried, *(f.name for f in FEATURES), *extra]].astype(
        {f.name: np.float64 for f in FEATURES}
    )


def stratified_sample(groups: npt.NDArray[np.int64], max_rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Sorted row indices of a seeded sample of at most ``max_rows`` rows (more only when there are more groups
    than ``max_rows``): every group keeps min(its rows, max(1, max_rows // groups)) rows, the room left is filled
    uniformly from the other rows."""
    n = len(groups)
    if n <= max_rows:
        return np.arange(n, dtype=np.int64)
    quota = max(1, max_rows // max(1, np.unique(groups).size))
    order = rng.permutation(n)
    shuffled = groups[order]
    by_group = np.argsort(shuffled, kind="stable")
    sorted_groups = shuffled[by_group]
    rank = np.empty(n, dtype=np.int64)  # each shuffled row's place within its group
    rank[by_group] = np.arange(n) - np.searchsorted(sorted_groups, sorted_groups, side="left")
    kept = order[rank < quota]
    room = max(0, max_rows - kept.size)
    return np.sort(np.concatenate([kept, order[rank >= quota][:room]])).astype(np.int64)


def task_series(
    app: SparkApp, max_tasks: int = DEFAULT_SERIES_MAX_TASKS, seed: int = DEFAULT_SERIES_SEED
) -> dict[str, Any]:
    """A seeded, executor-stratified sample of the app's task ends with each per-task feature value, in columns.

    Every task end but RESUBMITTED (which carries no metrics) on an executor other than the driver, as
    :func:`executor_features` counts them. Times are milliseconds since the app started (the first launch when the
    start is unknown); values are whole numbers (milliseconds, bytes). ``executor`` indexes ``executors``; a
    feature that is 0 for every sampled task is listed in ``zero_features`` instead of stored as a column of zeros.
    """
    driver = app.executor_ids.index("driver") if "driver" in app.executor_ids else -1
    stages = [stage for stage in app.stages.values() if len(stage.tasks)]
    # Only the sampled tasks' metrics are gathered: a million-task app keeps a few index arrays, not 12 columns.
    parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in ("launch", "finish", "executor", "where", "row")}
    for position, stage in enumerate(stages):
        t = stage.tasks
        row = np.flatnonzero((t.status != TaskStatus.RESUBMITTED) & (t.executor != driver))
        parts["launch"].append(t.launch_ms[row])
        parts["finish"].append(t.finish_ms[row])
        parts["executor"].append(t.executor[row])
        parts["where"].append(np.full(row.size, position, dtype=np.int64))
        parts["row"].append(row)
    cols = {k: np.concatenate(v).astype(np.int64) for k, v in parts.items() if v}
    if not cols or not cols["row"].size:
        return {"n_tasks": 0, "n_sampled": 0, "max_tasks": max_tasks, "seed": seed, "executors": []}
    launch, finish, executor = cols["launch"], cols["finish"], cols["executor"]
    origin = int(app.start_ms) if app.start_ms is not None else int(launch.min())
    rows = stratified_sample(executor, max_tasks, np.random.default_rng(seed))
    rows = rows[np.lexsort((executor[rows], finish[rows]))]  # by time, then executor
    where, row = cols["where"][rows], cols["row"][rows]
    present, index = np.unique(executor[rows], return_inverse=True)

    def gather(column: str, dtype: type = np.float64) -> npt.NDArray[Any]:
        out: npt.NDArray[Any] = np.zeros(rows.size, dtype=dtype)
        for position in np.unique(where):
            hit = where == position
            out[hit] = np.asarray(getattr(stages[position].tasks, column), dtype=dtype)[row[hit]]
        return out

    series: dict[str, Any] = {
        "n_tasks": int(launch.size),
        "n_sampled": int(rows.size),
        "max_tasks": max_tasks,
        "seed": seed,
        "origin_ms": origin,
        "executors": [app.executor_ids[i] for i in present],
        "executor": index.astype(int).tolist(),
        "launch_ms": (launch[rows] - origin).tolist(),
        "finish_ms": (finish[rows] - origin).tolist(),
        "stage": [int(stages[position].stage_id) for position in where],
        "failed": (gather("status", np.int64) == TaskStatus.FAILED).astype(int).tolist(),
        "features": {},
        "zero_features": [],
    }
    for name, column in SERIES_COLUMNS.items():
        values = np.rint(np.nan_to_num(gather(column), nan=0.0, posinf=0.0, neginf=0.0))
        # A hostile counter near 2^63 is 2^63 as a float, past int64: the cast would wrap it to -2^63.
        values = np.clip(values, -_INT64_FLOAT_MAX, _INT64_FLOAT_MAX)
        if np.any(values != 0):
            series["features"][name] = values.astype(np.int64).tolist()
        else:
            series["zero_features"].append(name)
    return series


def analysis_input(app: SparkApp, max_tasks: int = DEFAULT_SERIES_MAX_TASKS) -> dict[str, Any]:
    """What an app's analysis keeps for its executor ranking at storage: feature rows and the task series."""
    # Straight from the records, as feature_rows(executor_features(app)) gives them, without building a frame.
    return {
        "features": [_json_row(record) for record in executor_feature_records(app)],
        "series": task_series(app, max_tasks),
    }
