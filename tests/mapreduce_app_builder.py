"""Builds a MapReduceApp from compact case data (YAML-friendly dicts) for heuristic tests.

app:
  status: SUCCEEDED            # MRJobStatus name; default SUCCEEDED
  diagnostics: "..."           # the job's diagnostics
  conf: {mapreduce.map.memory.mb: 4096}   # values become strings, as in a _conf.xml
  maps:                        # and reduces: the same shape
    n: 10                      # task count when every column below is a scalar
    total_tasks: 1000          # default: the task count; larger with sampled: true
    sampled: false
    tasks:                     # any MRTaskColumns column, a list or a scalar, plus these shorthands:
      duration_ms: 60000       #   default 1000; start_ms START_MS, finish_ms = start + duration
      shuffle_ms: 1000         #   reduces: shuffle end = start + shuffle_ms
      sort_ms: 1000            #   reduces: sort end = shuffle end + sort_ms
      status: [SUCCEEDED, FAILED]   # MRTaskStatus names; default SUCCEEDED
      has_counters: true       #   default true
      hdfs_bytes_read: {runs: [[1048576, 200], [8388608, 10]]}   # 200 tasks of 1 MiB, then 10 of 8 MiB
    status_counts: {SUCCEEDED: 90, FAILED: 10}   # instead of a status column
    failures: {row: reason}    # or a string: the reason of every task that did not succeed
"""

from __future__ import annotations

from typing import Any

import numpy as np
from spark_app_builder import substitute

from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind, MRTaskColumns, MRTaskStatus

__all__ = ["build_app", "substitute"]

START_MS = 1_700_000_000_000  # tasks start here unless a case says otherwise (the model reads 0 as unknown)


def _expand(value: Any) -> Any:
    """{runs: [[value, count], ...]} -> the values repeated, in order; anything else as given."""
    if isinstance(value, dict):
        return [v for v, count in value["runs"] for _ in range(count)]
    return value


def _tasks(spec: dict[str, Any]) -> MRTaskColumns:
    columns = {name: _expand(value) for name, value in (spec.get("tasks") or {}).items()}
    if counts := spec.get("status_counts"):  # e.g. {SUCCEEDED: 90, FAILED: 10}, in that order
        columns["status"] = [status for status, count in counts.items() for _ in range(count)]
    lengths = {len(v) for v in columns.values() if isinstance(v, list)}
    if len(lengths) > 1:
        raise ValueError(f"task columns differ in length: {columns}")
    n = spec.get("n", lengths.pop() if lengths else 1)
    arrays: dict[str, Any] = {}
    for name, value in columns.items():
        values = value if isinstance(value, list) else [value] * n
        if name == "status":
            values = [MRTaskStatus[v] if isinstance(v, str) else v for v in values]
        arrays[name] = np.asarray(values, dtype=np.int64 if name != "has_counters" else np.bool_)
    shuffle = arrays.pop("shuffle_ms", None)
    sort = arrays.pop("sort_ms", None)
    arrays.setdefault("index", np.arange(n))
    arrays.setdefault("attempt", np.zeros(n, dtype=np.int64))
    arrays.setdefault("attempts", np.ones(n, dtype=np.int64))
    arrays.setdefault("has_counters", np.ones(n, dtype=np.bool_))
    duration = arrays.setdefault("duration_ms", np.full(n, 1000, dtype=np.int64))
    start = arrays.setdefault("start_ms", np.full(n, START_MS, dtype=np.int64))
    arrays.setdefault("task_start_ms", start)
    finish = arrays.setdefault("finish_ms", start + duration)
    arrays.setdefault("task_finish_ms", finish)
    if shuffle is not None:
        arrays.setdefault("shuffle_finish_ms", start + shuffle)
        arrays.setdefault("sort_finish_ms", arrays["shuffle_finish_ms"] + (sort if sort is not None else 0))
    failures = spec.get("failures") or {}
    if isinstance(failures, str):
        status = np.asarray(arrays.get("status", np.zeros(n)))
        failures = {int(row): failures for row in np.flatnonzero(status != MRTaskStatus.SUCCEEDED)}
    return MRTaskColumns.from_columns(arrays, {int(k): v for k, v in failures.items()})


def _phase(kind: MRPhaseKind, spec: dict[str, Any] | None) -> MRPhase:
    if spec is None:
        return MRPhase(kind)
    tasks = _tasks(spec)
    return MRPhase(
        kind, tasks=tasks, total_tasks=spec.get("total_tasks", len(tasks)), sampled=bool(spec.get("sampled", False))
    )


def build_app(spec: dict[str, Any]) -> MapReduceApp:
    app = MapReduceApp(
        job_id=spec.get("job_id", "job_1700000000000_0001"),
        name=spec.get("name", "test job"),
        status=MRJobStatus[spec.get("status", "SUCCEEDED")],
        diagnostics=spec.get("diagnostics", ""),
        conf={str(k): str(v) for k, v in (spec.get("conf") or {}).items()},
        maps=_phase(MRPhaseKind.MAP, spec.get("maps")),
        reduces=_phase(MRPhaseKind.REDUCE, spec.get("reduces")),
    )
    finishes = [int(p.tasks.finish_ms.max()) for p in app.phases if len(p.tasks)]
    app.submit_ms = spec.get("submit_ms", START_MS)
    app.finish_ms = spec.get("finish_ms", max(finishes, default=0))
    return app
