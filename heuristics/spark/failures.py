"""Shared counting for the job and stage failure heuristics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from appmodel.spark import SparkApp, TaskStatus
from heuristics.base import Change
from heuristics.changes import failure_kind
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


def failure_changes(app: SparkApp, stage_keys: Iterable[tuple[int, int]]) -> list[Change]:
    """What to fix: the most common failure kind (exception class, ``heuristics.changes.failure_kind``) over the
    failed task attempts of the given stage attempts, named with the stage where it happened most; a failed
    stage's own reason counts when its tasks logged none. Not a setting: the fix is in code, data or sizing."""
    counts: Counter[str] = Counter()
    by_stage: dict[str, Counter[tuple[int, int]]] = {}
    example: dict[str, str] = {}
    for key in stage_keys:
        stage = app.stages.get(key)
        if stage is None:
            continue
        status = stage.tasks.status
        reasons = [
            reason
            for row, reason in stage.tasks.failure_reasons.items()
            if 0 <= row < len(status) and status[row] in (TaskStatus.FAILED, TaskStatus.RESUBMITTED)
        ]
        if not reasons and stage.failure_reason:
            reasons = [stage.failure_reason]
        for reason in reasons:
            kind = failure_kind(reason)
            counts[kind] += 1
            by_stage.setdefault(kind, Counter())[key] += 1
            example.setdefault(kind, reason)
    if not counts:
        return []
    kind, count = counts.most_common(1)[0]
    stage_id, attempt = by_stage[kind].most_common(1)[0][0]
    lines = [line.strip() for line in example[kind].splitlines() if line.strip()]
    first_line = next((line for line in reversed(lines) if line.startswith(kind)), lines[0] if lines else "")[:200]
    total = sum(counts.values())
    where = f"stage {stage_id}" + (f".{attempt}" if attempt else "")
    return [Change(f"fix the failure in {where}", kind, f"{count} of {total} failures: {first_line}")]
