"""The task frame the straggler ranking reads, and the z-score normalization among sibling tasks.

A task frame is a pandas DataFrame with one row per finished task attempt:

``host``
    Where the task ran: any hashable (host name, or an integer id). Hosts are ranked by this key.
``group``
    The sibling set the task is compared with: one stage attempt of one Spark app, or the map (or reduce)
    phase of one MapReduce job. Integer codes are fastest (``task_frame_from_arrays`` makes them); strings
    such as ``"app-1:3:0"`` work too.
``duration_ms``
    The task's run time (float or int, milliseconds; any unit works, z-scores are unit-free).
``finish_ms``
    When the task ended (epoch ms): the window filter reads it.

``log_ratio`` (optional)
    ln(duration / median duration of its siblings): how many times slower than its siblings the task ran, the
    unit the straggler floor is stated in (``RankingConfig.min_slowdown``). Computed from ``duration_ms`` when
    the frame has it; a frame with ``z`` carries it when known (the product: each stored sample's app-host
    mean), and hosts without it cannot be called stragglers.

Extra columns are carried and ignored.

Because sibling groups never span apps, z-scores can be computed once per app when it is analyzed
(``with_zscores``) and kept as (host, z, finish_ms): a frame with a ``z`` column skips the normalization, so
a periodic ranking only concatenates the stored per-app frames of its window. ``host_task_samples`` is that
per-app record in the product: per host, the count and summed duration of its tasks and a bounded, seeded
sample of their z-scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from appmodel import MapReduceApp, MRTaskColumns, SparkApp, TaskColumns

if TYPE_CHECKING:  # pandas loads only where a frame is built: the per-app samples need none
    import pandas as pd  # type: ignore[import-untyped]

REQUIRED_COLUMNS: Final = ("host", "group", "duration_ms", "finish_ms")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class TaskFrameError(ValueError):
    """The task frame lacks a column or holds values the ranking cannot use."""


def validate(tasks: pd.DataFrame) -> None:
    """A frame with ``z`` (z-scores already computed, see ``with_zscores``) needs only host, z and finish_ms."""
    import pandas as pd

    needed = ("host", "z", "finish_ms") if "z" in tasks.columns else REQUIRED_COLUMNS
    missing = [c for c in needed if c not in tasks.columns]
    if missing:
        raise TaskFrameError(f"task frame lacks columns {missing}; needs {list(needed)}")
    for col in needed[2:] if "z" not in tasks.columns else ("z", "finish_ms"):
        if not pd.api.types.is_numeric_dtype(tasks[col]):
            raise TaskFrameError(f"task frame column {col!r} must be numeric, got {tasks[col].dtype}")


def task_frame_from_arrays(
    host: npt.ArrayLike,
    group: npt.ArrayLike,
    duration_ms: npt.ArrayLike,
    finish_ms: npt.ArrayLike,
) -> pd.DataFrame:
    """A task frame from equal-length per-task arrays (no copy of numpy inputs beyond pandas' own).

    This is the shape the app model already holds: each Spark ``StageAttempt.tasks`` (``host``,
    ``duration_ms``, ``finish_ms`` columns) or MapReduce ``MRPhase.tasks`` concatenated, with ``group`` the
    running number of the stage attempt or phase and ``host`` mapped to names through ``app.hosts``.
    """
    import pandas as pd

    arrays = {
        "host": np.asarray(host),
        "group": np.asarray(group),
        "duration_ms": np.asarray(duration_ms),
        "finish_ms": np.asarray(finish_ms),
    }
    lengths = {k: v.shape[0] if v.ndim == 1 else -1 for k, v in arrays.items()}
    if len(set(lengths.values())) != 1 or -1 in lengths.values():
        raise TaskFrameError(f"task arrays must be one-dimensional and equal in length, got {lengths}")
    frame = pd.DataFrame(arrays, copy=False)
    validate(frame)
    return frame


@dataclass(frozen=True, slots=True)
class ZScores:
    """Per-task z-scores among siblings; NaN where the task's group was skipped."""

    z: FloatArray
    groups_used: int
    groups_skipped: int  # too few tasks or zero variance
    tasks_skipped: int


def sibling_zscores(group: npt.ArrayLike, duration: npt.ArrayLike, min_group_tasks: int = 5) -> ZScores:
    """z = (t - mean of its group) / std of its group (ddof=1), the paper's Eq. (1).

    Groups with fewer than ``min_group_tasks`` tasks, or whose durations do not vary, give NaN: a z-score
    among two siblings says nothing about a host, and a constant group has no scale. Vectorized with
    ``np.bincount`` over factorized group codes (a groupby-transform without pandas' per-group overhead:
    about 2 s for 10M tasks). Durations that are NaN or negative (unfinished tasks) are NaN and are not
    counted as siblings.
    """
    import pandas as pd

    if min_group_tasks < 2:
        raise ValueError("min_group_tasks must be at least 2 (a standard deviation needs two tasks)")
    t = np.asarray(duration, dtype=np.float64)
    codes, uniques = pd.factorize(np.asarray(group), use_na_sentinel=True)
    ok = (codes >= 0) & np.isfinite(t) & (t >= 0)
    codes_ok = np.where(ok, codes, len(uniques))  # invalid rows go to a sink bin, dropped below
    nb = len(uniques) + 1
    t0 = np.where(ok, t, 0.0)
    count = np.bincount(codes_ok, minlength=nb).astype(np.float64)
    count[-1] = 0.0
    total = np.bincount(codes_ok, weights=t0, minlength=nb)
    mean = np.divide(total, count, out=np.zeros(nb), where=count > 0)
    dev = t0 - mean[codes_ok]
    ss = np.bincount(codes_ok, weights=dev * dev, minlength=nb)  # two-pass: no cancellation on large ms values
    var = np.divide(ss, count - 1.0, out=np.zeros(nb), where=count > 1)
    std = np.sqrt(var)
    # Zero variance up to rounding: integer ms durations that are all equal give exactly 0.
    usable = (count >= min_group_tasks) & (std > 1e-12 * np.maximum(np.abs(mean), 1.0))
    usable[-1] = False
    z = np.full(t.shape[0], np.nan)
    take = usable[codes_ok]
    z[take] = dev[take] / std[codes_ok[take]]
    present = count[:-1] > 0
    return ZScores(
        z=z,
        groups_used=int(np.count_nonzero(usable[:-1])),
        groups_skipped=int(np.count_nonzero(present & ~usable[:-1])),
        tasks_skipped=int(np.count_nonzero(~take)),
    )


def sibling_log_ratios(group: npt.ArrayLike, duration: npt.ArrayLike, min_group_tasks: int = 5) -> FloatArray:
    """ln(max(t, 1 ms) / max(median of its group, 1 ms)) per task; NaN where ``sibling_zscores`` gives NaN (group
    too small or constant, invalid duration). The median, not the mean: a slow host's own tasks must not move
    the yardstick it is measured with, and a task's noise ratio is symmetric in log space."""
    import pandas as pd

    t = np.asarray(duration, dtype=np.float64)
    z = sibling_zscores(group, t, min_group_tasks).z
    ok = np.isfinite(z)
    out = np.full(t.shape[0], np.nan)
    if not ok.any():
        return out
    series = pd.Series(np.maximum(t[ok], 1.0))
    median = series.groupby(np.asarray(group)[ok]).transform("median").to_numpy(dtype=np.float64)
    out[ok] = np.log(series.to_numpy()) - np.log(median)
    return out


def task_frame_from_app(app: SparkApp | MapReduceApp, key: str | None = None) -> pd.DataFrame:
    """The task frame of one analyzed app: its successful task attempts, grouped by stage attempt (Spark) or
    phase (MapReduce), host names from ``app.hosts``.

    ``group`` is ``"<key>:<stage>:<attempt>"`` (Spark) or ``"<key>:map"``/``"<key>:reduce"`` (MapReduce), with
    ``key`` the app id by default, so frames of many apps concatenate without clashes. Failed, killed and
    unfinished attempts are left out (their duration says how long until they died, not how fast the host
    runs); so are local-mode Spark apps (every task on one machine: nothing to compare) and tasks whose host
    is unknown.
    """
    import pandas as pd

    parts: list[pd.DataFrame] = []
    hosts = np.asarray(app.hosts, dtype=object)
    if isinstance(app, MapReduceApp):
        app_key = key or app.job_id
        for phase in app.phases:
            mr = phase.tasks
            keep = mr.succeeded & (mr.host >= 0) & (mr.finish_ms > 0)
            parts.append(_part(hosts[mr.host[keep]], f"{app_key}:{phase.kind.value}", mr, keep))
    elif not app.is_local:
        app_key = key or app.app_id
        for (stage_id, attempt_id), stage in sorted(app.stages.items()):
            sp = stage.tasks
            keep = sp.succeeded & (sp.host >= 0) & (sp.finish_ms > 0)
            parts.append(_part(hosts[sp.host[keep]], f"{app_key}:{stage_id}:{attempt_id}", sp, keep))
    parts = [p for p in parts if len(p)]
    if not parts:
        empty = {"host": object, "group": object, "duration_ms": np.float64, "finish_ms": np.int64}
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in empty.items()})
    return pd.concat(parts, ignore_index=True)


def _part(
    host: npt.NDArray[np.object_], group: str, cols: TaskColumns | MRTaskColumns, keep: npt.NDArray[np.bool_]
) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "host": host,
            "group": group,
            "duration_ms": cols.duration_ms[keep].astype(np.float64),
            "finish_ms": cols.finish_ms[keep],
        }
    )


def with_zscores(tasks: pd.DataFrame, min_group_tasks: int = 5) -> pd.DataFrame:
    """(host, z, log_ratio, finish_ms) of the tasks whose group could be normalized: what to keep per analyzed app."""
    import pandas as pd

    validate(tasks)
    group, duration = tasks["group"].to_numpy(), tasks["duration_ms"].to_numpy()
    zs = sibling_zscores(group, duration, min_group_tasks)
    ratio = sibling_log_ratios(group, duration, min_group_tasks)
    keep = np.isfinite(zs.z)
    return pd.DataFrame(
        {
            "host": tasks["host"].to_numpy()[keep],
            "z": zs.z[keep],
            "log_ratio": ratio[keep],
            "finish_ms": tasks["finish_ms"].to_numpy()[keep],
        }
    )


# Per app and host, at most this many z-scores are kept (a seeded sample beyond it): 1 KiB of float32 per row,
# while a host's mean over many apps stays unbiased (each app's sample is uniform over the host's tasks there).
HOST_SAMPLE_MAX: Final = 256


@dataclass(frozen=True, slots=True)
class HostTasks:
    """One app's tasks on one host as the periodic ranking reads them (what ``AppHostTasks`` stores).

    ``n_tasks`` and ``task_ms`` count every task of the host with a z-score; ``z`` holds at most
    ``HOST_SAMPLE_MAX`` of their z-scores as little-endian float32 bytes (``zscores()`` reads them back);
    ``log_ratio_sum`` sums ``sibling_log_ratios`` over those ``n_tasks`` (None: stored before it existed).
    """

    host: str
    n_tasks: int
    task_ms: int
    z: bytes
    log_ratio_sum: float | None = None

    def zscores(self) -> npt.NDArray[np.float32]:
        return np.frombuffer(self.z, dtype="<f4")


def _sibling_groups(app: SparkApp | MapReduceApp) -> list[tuple[IntArray, FloatArray]]:
    """(host index into ``app.hosts``, duration) of the kept tasks of each sibling group, as ``task_frame_from_app``
    keeps them; no strings, so an app of a million tasks takes a fraction of a second."""
    groups: list[tuple[IntArray, FloatArray]] = []
    columns: list[TaskColumns | MRTaskColumns]
    if isinstance(app, MapReduceApp):
        columns = [phase.tasks for phase in app.phases]
    elif not app.is_local:
        columns = [stage.tasks for _key, stage in sorted(app.stages.items())]
    else:
        columns = []
    for cols in columns:
        keep = cols.succeeded & (cols.host >= 0) & (cols.finish_ms > 0)
        if keep.any():
            groups.append((cols.host[keep].astype(np.int64), cols.duration_ms[keep].astype(np.float64)))
    return groups


def _one_group_zscores(duration: FloatArray, min_group_tasks: int) -> tuple[FloatArray, FloatArray]:
    """``sibling_zscores`` and ``sibling_log_ratios`` of one sibling group, in numpy alone (no factorizing): the
    per-app samples' hot path."""
    t = np.asarray(duration, dtype=np.float64)
    ok = np.isfinite(t) & (t >= 0)
    z = np.full(t.shape[0], np.nan)
    ratio = np.full(t.shape[0], np.nan)
    count = int(np.count_nonzero(ok))
    if count < min_group_tasks:
        return z, ratio
    mean = float(t[ok].sum()) / count
    dev = t[ok] - mean
    std = float(np.sqrt(float((dev * dev).sum()) / (count - 1)))
    if std > 1e-12 * max(abs(mean), 1.0):
        z[ok] = dev / std
        clipped = np.maximum(t[ok], 1.0)
        ratio[ok] = np.log(clipped) - np.log(float(np.median(clipped)))
    return z, ratio


def host_task_samples(
    app: SparkApp | MapReduceApp, max_samples: int = HOST_SAMPLE_MAX, min_group_tasks: int = 5, seed: int = 0
) -> tuple[HostTasks, ...]:
    """Per host of one analyzed app: tasks with a z-score among their siblings, their summed duration and a
    seeded sample of at most ``max_samples`` z-scores; hosts ordered by name. The tasks and groups are
    ``task_frame_from_app``'s, the z-scores ``sibling_zscores``'. Local-mode apps, and apps whose every sibling
    group is too small or constant, give nothing.

    The sample is drawn without replacement by a generator seeded with ``seed``, so analyzing the same app
    again stores the same values.
    """
    if max_samples < 1:
        raise ValueError("max_samples must be at least 1")
    host_parts: list[IntArray] = []
    z_parts: list[FloatArray] = []
    duration_parts: list[FloatArray] = []
    ratio_parts: list[FloatArray] = []
    for host, duration in _sibling_groups(app):
        z, ratio = _one_group_zscores(duration, min_group_tasks)
        ok = np.isfinite(z)
        if ok.any():
            host_parts.append(host[ok])
            z_parts.append(z[ok])
            duration_parts.append(duration[ok])
            ratio_parts.append(ratio[ok])
    if not z_parts:
        return ()
    host_idx = np.concatenate(host_parts)
    z_all = np.concatenate(z_parts)
    n_hosts = max(len(app.hosts), int(host_idx.max()) + 1)
    labels = [str(app.hosts[i]) if i < len(app.hosts) else str(i) for i in range(n_hosts)]
    order = np.argsort(host_idx, kind="stable")
    counts = np.bincount(host_idx, minlength=n_hosts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    totals = np.bincount(host_idx, weights=np.concatenate(duration_parts), minlength=n_hosts)
    ratio_sums = np.bincount(host_idx, weights=np.concatenate(ratio_parts), minlength=n_hosts)
    rng = np.random.default_rng(seed)
    out = []
    for i in sorted(np.flatnonzero(counts).tolist(), key=labels.__getitem__):
        rows = order[starts[i] : starts[i] + counts[i]]
        if rows.shape[0] > max_samples:
            rows = np.sort(rng.choice(rows, max_samples, replace=False))
        out.append(
            HostTasks(
                host=labels[i],
                n_tasks=int(counts[i]),
                task_ms=round(float(totals[i])),
                z=z_all[rows].astype("<f4").tobytes(),
                log_ratio_sum=float(ratio_sums[i]),
            )
        )
    return tuple(out)
