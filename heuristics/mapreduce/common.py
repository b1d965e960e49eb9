"""Shared MapReduce helpers: which tasks a heuristic may judge, sampling notes, two-sided severities, conf values."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from appmodel.formatting import format_bytes, setting_mebibytes
from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind
from appmodel.units import MIB, parse_hadoop_size
from heuristics.base import Change, Heuristic, HeuristicResult, Observed
from heuristics.changes import HEAP_TO_CONTAINER, suggested_memory, with_xmx, xmx_bytes
from heuristics.severity import Severity, Thresholds

MAPREDUCE: tuple[str, ...] = ("mapreduce",)
MIN_MS = 60_000
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

PHASE_LABEL = {MRPhaseKind.MAP: "map", MRPhaseKind.REDUCE: "reduce"}
# The (stage id, attempt) a phase stands in for in a report: maps 0, reduces 1, as analysis.summaries numbers them.
PHASE_STAGE = {MRPhaseKind.MAP: (0, 0), MRPhaseKind.REDUCE: (1, 0)}


def phase_stages(phase: MRPhase, severity: Severity) -> list[tuple[int, int]]:
    """The phase as the stage a finding involves, when there is a finding."""
    return [PHASE_STAGE[phase.kind]] if severity > Severity.NONE else []


def not_judged_unless_succeeded(heuristic: Heuristic[Any], app: MapReduceApp) -> HeuristicResult | None:
    """Dr. Elephant's rule: task heuristics judge succeeded jobs only (a failed job's tasks describe an unfinished
    run, and mapreduce.exception reports why it failed). A NONE result with a note, or None to go on."""
    if app.status == MRJobStatus.SUCCEEDED:
        return None
    return heuristic.no_finding(
        ("Note", f"the job did not succeed ({app.status.value}): its tasks are not judged; see Exception"),
        job_status=app.status.value,
    )


def counted(phase: MRPhase) -> int:
    """What a score counts: every task of the phase, sampled or not (as Dr. Elephant counts them)."""
    return max(phase.total_tasks, len(phase.tasks))


@dataclass
class Selection:
    """The tasks of a phase a heuristic judges, with notes saying which were left out and why."""

    rows: Mask
    notes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(np.count_nonzero(self.rows))


def select_tasks(phase: MRPhase, *, counters: bool, timed: bool) -> Selection:
    """Succeeded tasks, with counters and/or a known duration as asked; notes for excluded tasks and sampling."""
    tasks = phase.tasks
    label = PHASE_LABEL[phase.kind]
    rows = tasks.succeeded.copy()
    notes: list[tuple[str, str]] = []
    if phase.sampled:
        notes.append(
            ("Sampled", f"{len(tasks)} of {counted(phase)} {label} tasks were fetched; values describe that sample")
        )
    if counters:
        missing = rows & ~tasks.has_counters
        if missing.any():
            notes.append(("Note", f"{int(missing.sum())} succeeded {label} task(s) logged no counters: left out"))
        rows &= tasks.has_counters
    if timed:
        untimed = rows & (tasks.duration_ms <= 0)
        if untimed.any():
            notes.append(("Note", f"{int(untimed.sum())} succeeded {label} task(s) have no known duration: left out"))
        rows &= tasks.duration_ms > 0
    return Selection(rows=rows, notes=notes)


def no_tasks(heuristic: Heuristic[Any], phase: MRPhase, selection: Selection, what: str) -> HeuristicResult:
    label = PHASE_LABEL[phase.kind]
    return heuristic.no_finding(
        *selection.notes, ("Note", f"no succeeded {label} task with {what}: nothing to judge"), tasks=len(phase.tasks)
    )


def mean(values: npt.ArrayLike) -> float:
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()) if array.size else 0.0


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, with x/0 = inf for x > 0 and 0/0 = 0."""
    if denominator == 0:
        return math.inf if numerator > 0 else 0.0
    return numerator / denominator


def judge_sides(
    heuristic: Heuristic[Any], observed: Observed, sides: Sequence[Mapping[str, float]]
) -> tuple[Severity, int]:
    """Dr. Elephant's "max of mins": each side's severity is the least its checks reach (a secondary check caps
    it), the result the worst side. Records the deciding side's values under their threshold keys (so the
    report shows what decided), and returns (severity, index of that side). NaN values are not judged."""
    best, best_index = Severity.NONE, -1
    for index, side in enumerate(sides):
        levels = [thresholds_of(heuristic, key).severity_of(value) for key, value in side.items()]
        judged = [level for level, value in zip(levels, side.values(), strict=True) if not math.isnan(value)]
        if not judged:
            continue
        level = Severity(min(judged))
        if best_index < 0 or level > best:
            best, best_index = level, index
    if best_index >= 0:
        for key, value in sides[best_index].items():
            if not math.isnan(value):
                observed[key] = value
    return best, best_index


def thresholds_of(heuristic: Heuristic[Any], key: str) -> Thresholds:
    thresholds = getattr(heuristic.config, key, None)
    if not isinstance(thresholds, Thresholds):
        raise TypeError(f"{heuristic.code}: {key} is not a four-level threshold setting")
    return thresholds


def two_groups(values: npt.NDArray[np.float64]) -> Mask:
    """Split values into a low group A (True) and a high group B (False) by 2-means from the mean, refined twice
    (as Dr. Elephant does), each new split point being the midpoint of the two group averages."""
    if values.size == 0:
        return np.zeros(0, dtype=np.bool_)
    middle = float(values.mean())
    for _ in range(2):
        low = values < middle
        if low.all() or not low.any():
            break
        middle = (float(values[low].mean()) + float(values[~low].mean())) / 2
    return values < middle


def conf_int(app: MapReduceApp, keys: Sequence[str], warnings: list[tuple[str, str]]) -> tuple[str, int] | None:
    """The first of ``keys`` set in the job conf, as a whole number (key, value); garbage adds a warning."""
    for key in keys:
        raw = app.conf_value(key)
        if raw is None or not raw.strip():
            continue
        try:
            return key, int(raw.strip())
        except ValueError:
            warnings.append(("Warning", f"{key} = {raw[:80]!r} is not a whole number; ignored"))
            return None
    return None


def conf_bytes(app: MapReduceApp, key: str, warnings: list[tuple[str, str]]) -> int | None:
    """A Hadoop size property (``dfs.blocksize``: bytes, or a k/m/g/t/p suffix) in bytes; None when unset."""
    raw = app.conf_value(key)
    if raw is None or not raw.strip():
        return None
    try:
        value = parse_hadoop_size(raw)
    except ValueError:
        warnings.append(("Warning", f"{key} = {raw[:80]!r} is not a size; ignored"))
        return None
    return value if value > 0 else None


def block_size(app: MapReduceApp, default_mib: float, warnings: list[tuple[str, str]]) -> float:
    """The job's HDFS block size (dfs.blocksize, or the old dfs.block.size), else the configured default."""
    for key in ("dfs.blocksize", "dfs.block.size"):
        value = conf_bytes(app, key, warnings)
        if value is not None:
            return float(value)
    return default_mib * MIB


def minutes(ms: float) -> float:
    return ms / MIN_MS


# ---- changes: container and heap settings computed from the job (heuristics.changes has the formulas) ----------

ROLE = {MRPhaseKind.MAP: "map", MRPhaseKind.REDUCE: "reduce"}


def heap_bytes(app: MapReduceApp, phase: MRPhase) -> tuple[int | None, int | None]:
    """(the -Xmx in mapreduce.<role>.java.opts, else mapred.child.java.opts; the container MiB set), None where
    unknown."""
    role = ROLE[phase.kind]
    opts = app.conf_value(f"mapreduce.{role}.java.opts") or app.conf_value("mapred.child.java.opts")
    container = conf_int(app, (f"mapreduce.{role}.memory.mb", f"mapred.job.{role}.memory.mb"), [])
    return xmx_bytes(opts), (container[1] if container and container[1] > 0 else None)


def memory_changes(app: MapReduceApp, phase: MRPhase, heap: int, container_at_least: int, why: str) -> list[Change]:
    """A container and its heap: -Xmx = ``heap`` (whole MiB) in mapreduce.<role>.java.opts (other options kept),
    mapreduce.<role>.memory.mb = heap / 0.8 (Hadoop's heap-to-container ratio), rounded up to 512 MiB, never below
    ``container_at_least``."""
    role = ROLE[phase.kind]
    opts_key = f"mapreduce.{role}.java.opts"
    opts = app.conf_value(opts_key) or app.conf_value("mapred.child.java.opts")
    container = suggested_memory(heap / HEAP_TO_CONTAINER, at_least=container_at_least)
    return [
        Change(f"mapreduce.{role}.memory.mb", setting_mebibytes(container), why),
        Change(opts_key, with_xmx(opts, heap), f"heap {format_bytes(heap)}, {HEAP_TO_CONTAINER:.0%} of the container"),
    ]
