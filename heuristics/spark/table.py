"""All task attempts of an app as one set of columns, with vectorized per-stage-attempt reductions.

Heuristics ask for the table with ``task_table(app)``; the last table built is kept per thread, so a suite
evaluating one app concatenates each column once instead of once per heuristic. Suite.evaluate forgets it
before and after each app.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from appmodel.spark import SparkApp, StageAttempt

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


class TaskTable:
    def __init__(self, app: SparkApp) -> None:
        self.stages: list[StageAttempt] = app.stage_attempts()
        sizes = np.array([len(s.tasks) for s in self.stages], dtype=np.int64)
        self.sizes = sizes
        self.stage_of_row = np.repeat(np.arange(len(self.stages)), sizes)
        # Columns keep their own dtypes (int64, float64, int8, bool), so they are typed as arrays of Any.
        self._columns: dict[str, npt.NDArray[Any]] = {}

    def __len__(self) -> int:
        return int(self.stage_of_row.shape[0])

    def column(self, name: str) -> npt.NDArray[Any]:
        """A task column (or ``shuffle_read_bytes``) over all stage attempts, in stage-attempt order."""
        if name not in self._columns:
            parts = [getattr(s.tasks, name) for s in self.stages]
            self._columns[name] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return self._columns[name]

    def status(self, value: int) -> Bools:
        return self.column("status") == value

    def sum(self, values: npt.ArrayLike, where: Bools | None = None) -> Floats:
        weights = np.asarray(values, dtype=np.float64)
        if where is not None:
            weights = np.where(where, weights, 0.0)
        return weighted_bincount(self.stage_of_row, weights, len(self.stages))

    def count(self, where: Bools) -> npt.NDArray[np.intp]:
        return np.bincount(self.stage_of_row[where], minlength=len(self.stages))

    def max(self, values: npt.ArrayLike, where: Bools | None = None) -> Floats:
        """Per stage attempt maximum; -inf for a stage attempt with no (selected) rows."""
        result = np.full(len(self.stages), -np.inf)
        array = np.asarray(values, dtype=np.float64)
        groups = self.stage_of_row
        if where is not None:
            array, groups = array[where], groups[where]
        if len(array):
            # Rows are grouped by stage attempt, so reduceat over the starts of non-empty runs is exact.
            starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
            result[groups[starts]] = np.maximum.reduceat(array, starts)
        return result

    def wall_ms(self) -> Floats:
        """Per stage attempt wall-clock duration: submission to completion, else first task launch to last task
        finish; NaN when neither is known."""
        finish, launch = self.column("finish_ms"), self.column("launch_ms")
        done = finish > 0
        task_span = self.max(finish, done) + self.max(-launch, done)  # -inf when no task finished
        logged = np.array([s.duration_ms if s.duration_ms is not None else np.nan for s in self.stages], dtype=float)
        walls = np.where(np.isnan(logged), task_span, logged)
        return np.where(np.isfinite(walls), walls, np.nan)

    def median(self, values: npt.ArrayLike, where: Bools | None = None) -> Floats:
        """Per stage attempt median (mean of the two middle values for even counts); NaN when no rows."""
        array = np.asarray(values, dtype=np.float64)
        groups = self.stage_of_row
        if where is not None:
            array, groups = array[where], groups[where]
        counts = np.bincount(groups, minlength=len(self.stages))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        result = np.full(len(self.stages), np.nan)
        # Small stage attempts: pad them into rows of a 2-D block and sort each row at once. Widths go up in
        # steps so a few wide rows never make the block large.
        lower = 0
        for width in SMALL_WIDTHS:
            chosen = np.flatnonzero((counts > lower) & (counts <= width))
            lower = width
            if not len(chosen):
                continue
            block_row = np.full(len(self.stages), -1)
            block_row[chosen] = np.arange(len(chosen))
            member = block_row[groups] >= 0
            block = np.full((len(chosen), width), np.inf)
            positions = np.arange(len(array))[member] - starts[groups[member]]
            block[block_row[groups[member]], positions] = array[member]
            block.sort(axis=1)
            n = counts[chosen]
            rows = np.arange(len(chosen))
            result[chosen] = (block[rows, (n - 1) // 2] + block[rows, n // 2]) / 2
        for i in np.flatnonzero(counts > lower):  # large stage attempts, one quickselect each
            result[i] = np.median(array[starts[i] : starts[i] + counts[i]])
        return result


SMALL_WIDTHS = (4, 16, 64, 256)


def weighted_bincount(groups: npt.ArrayLike, weights: npt.ArrayLike, size: int) -> Floats:
    """Per group the sum of the weights, as float64; numpy's stubs type every bincount as integers."""
    return cast(Floats, np.bincount(groups, weights=weights, minlength=size))


_last = threading.local()


def task_table(app: SparkApp) -> TaskTable:
    """The app's task table, reused while the same app is evaluated (see ``forget_task_tables``)."""
    cached = getattr(_last, "entry", None)
    if cached is not None and cached[0] is app and cached[1] == len(app.stages):
        return cached[2]
    table = TaskTable(app)
    _last.entry = (app, len(app.stages), table)
    return table


def forget_task_tables() -> None:
    """Drop this thread's cached table, so a changed app is re-read and memory is released."""
    _last.entry = None
