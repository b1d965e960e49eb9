"""Shared counting for the job and stage failure heuristics."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from appmodel.spark import SparkApp, TaskStatus
from heuristics.spark.table import task_table


def task_outcomes_by_stage_attempt(app: SparkApp) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(succeeded, failed) task attempts per stage attempt, in task_table order.

    Failed includes resubmitted tasks (their output was lost with an executor), as Spark counts them; killed tasks
    (speculation losers, cancelled jobs) are neither.
    """
    table = task_table(app)
    failed = table.status(TaskStatus.FAILED) | table.status(TaskStatus.RESUBMITTED)
    return table.count(table.status(TaskStatus.SUCCESS)), table.count(failed)


def task_outcomes_by_stage(app: SparkApp) -> dict[int, tuple[int, int]]:
    """stage id -> (succeeded, failed) task attempts over all its attempts."""
    succeeded, failed = task_outcomes_by_stage_attempt(app)
    totals: dict[int, tuple[int, int]] = {}
    for stage, ok, bad in zip(task_table(app).stages, succeeded.tolist(), failed.tolist(), strict=True):
        before = totals.get(stage.stage_id, (0, 0))
        totals[stage.stage_id] = (before[0] + ok, before[1] + bad)
    return totals
