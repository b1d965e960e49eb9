"""Stored rows for tests of the read side (selectors, pages): one place that knows a plausible AnalyzedApp."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from analyzer.models import AnalyzedApp, AppHostTasks, HeuristicDetail, HeuristicResult

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
SPARK_4_LOGS = Path("spark-generated/spark-4.1.1/event-logs")  # under the refdata fixture
_serial = itertools.count(1)


def make_app(**fields: Any) -> AnalyzedApp:
    """An app that ended n minutes before NOW after running an hour; ``fields`` override anything."""
    n = next(_serial)
    values: dict[str, Any] = {
        "source": f"/logs/app-{n}",
        "app_id": f"application_1700000000000_{n:04d}",
        "name": f"job {n}",
        "user": "alice",
        "status": "SUCCEEDED",
        "spark_version": "4.1.1",
        "start_time": NOW - dt.timedelta(minutes=n, hours=1),
        "end_time": NOW - dt.timedelta(minutes=n),
        "runtime_ms": 3_600_000,
    }
    values.update(fields)
    return AnalyzedApp.objects.create(**values)


def add_finding(
    app: AnalyzedApp, code: str, severity: int, position: int = 0, details: int = 0, **fields: Any
) -> HeuristicResult:
    """A heuristic result on ``app`` with ``details`` numbered detail rows."""
    values: dict[str, Any] = {"name": code.replace(".", " ").replace("_", " ").title(), "score": severity * 4}
    values.update(fields)
    result = HeuristicResult.objects.create(app=app, code=code, severity=severity, position=position, **values)
    for i in range(details):
        HeuristicDetail.objects.create(result=result, position=i, name=f"detail {i}", value=str(i))
    return result


def set_mtime(path: Path, ms: int) -> None:
    """A log's completion time as the eventlog-dir backend sees it: every file's mtime."""
    for entry in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(entry, ns=(ms * 1_000_000, ms * 1_000_000))


def copy_log(refdata: Path, name: str, directory: Path, finished_ms: int) -> Path:
    """A writable copy of a Spark 4.1.1 reference log (file or rolling dir) in ``directory``, finished then."""
    source = refdata / SPARK_4_LOGS / name
    target = directory / name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    for entry in [target, *target.rglob("*")]:
        entry.chmod(entry.stat().st_mode | stat.S_IWUSR)  # refdata is read-only
    set_mtime(target, finished_ms)
    return target


def add_host_tasks(
    app: AnalyzedApp, host: str, z: Any, task_ms: int | None = None, log_ratio: float | str | None = "from z"
) -> AppHostTasks:
    """A host's z-score sample in ``app`` (every z stored, as when the host ran at most HOST_SAMPLE_MAX tasks).

    ``log_ratio``: the mean ln(duration / sibling median) of its tasks; by default 0.4 z, as for siblings whose
    durations vary by about 40% (a host 1.5 sibling std slower ran 1.8x its siblings); None stores none (a row
    from before issue 16)."""
    import numpy as np

    values = np.asarray(z, dtype="<f4")
    if log_ratio == "from z":
        ratio_sum: float | None = 0.4 * float(values.astype(np.float64).sum())
    else:
        ratio_sum = None if log_ratio is None else float(log_ratio) * values.size
    return AppHostTasks.objects.create(
        app=app,
        cluster=app.cluster,
        host=host,
        end_time=app.end_time,
        n_tasks=values.size,
        task_ms=task_ms if task_ms is not None else 1000 * values.size,
        z=values.tobytes(),
        log_ratio_sum=ratio_sum,
    )


class _NoHeuristics:
    def evaluate(self, app: Any) -> list[Any]:
        return []


def store_spark_app(
    *,
    executors: int = 12,
    tasks_per_executor: int = 20,
    slow_executor: str | None = None,
    app_id: str | None = None,
    template: str = "",
    start_ms: int = 1_772_359_200_000,  # NOW - 2 h
    executor_ids: list[str] | None = None,
    hosts: list[str] | None = None,
    master: str = "yarn",
    seed: int = 0,
    **extra: Any,
) -> AnalyzedApp:
    """A Spark app analyzed and stored as the pipeline does (``report_store``): executors with similar tasks, the
    ``slow_executor``'s tasks spending five times the GC (and so longer); ``extra`` sets AnalyzedApp fields
    (cluster, ...). Its executor anomaly report is computed on the way, as in production."""
    import dataclasses

    import numpy as np

    from analysis.jobinfo import JobInfo
    from analysis.pipeline import analyze
    from analyzer.services import report_store
    from tests.spark_app_builder import build_app

    n = next(_serial)
    ids = executor_ids or [str(i + 1) for i in range(executors)]
    names = hosts or [f"worker-{i % 4 + 1}.example" for i in range(len(ids))]
    rng = np.random.default_rng(seed)
    count = len(ids) * tasks_per_executor
    owner = [ids[i % len(ids)] for i in range(count)]
    slow = np.array([e == slow_executor for e in owner])
    cpu = rng.normal(2000, 100, count).round()
    gc = np.where(slow, 5, 1) * rng.normal(150, 10, count).round()
    run = cpu + gc
    launch = start_ms + 1000 + (np.arange(count) // len(ids)) * 2500
    spec = {
        "app_id": app_id or f"application_1700000000000_{n:04d}",
        "master": master,
        "start_ms": start_ms,
        "executors": [{"id": e, "host": h, "cores": 2, "added_ms": start_ms} for e, h in zip(ids, names, strict=True)]
        if not master.startswith("local")
        else [],
        "stages": [
            {
                "n": count,
                "tasks": {
                    "executor": owner if not master.startswith("local") else "driver",
                    "launch_ms": launch.tolist(),
                    "duration_ms": (run + 20).tolist(),
                    "executor_run_time_ms": run.tolist(),
                    "executor_cpu_time_ms": cpu.tolist(),
                    "jvm_gc_time_ms": gc.tolist(),
                    "input_bytes": rng.normal(64 << 20, 1 << 20, count).round().tolist(),
                    "shuffle_write_bytes": rng.normal(8 << 20, 1 << 18, count).round().tolist(),
                    "peak_execution_memory": rng.normal(32 << 20, 1 << 20, count).round().tolist(),
                },
            }
        ],
    }
    app = build_app(spec)
    app.source = f"/logs/{spec['app_id']}"
    report = analyze(app, _NoHeuristics())
    report = dataclasses.replace(report, job=JobInfo(job_type="Spark", template=template))
    stored = report_store(report=report, source=app.source, extra=extra or None)
    return stored


def add_stage(app: AnalyzedApp, stage_id: int, duration_ms: float | None, **fields: Any) -> Any:
    """A stored stage attempt of ``app`` (attempt 0, COMPLETE, named ``stage <id>`` unless ``fields`` say)."""
    from analyzer.models import StageSummary

    values: dict[str, Any] = {"attempt_id": 0, "name": f"stage {stage_id}", "status": "COMPLETE"}
    values.update(fields)
    duration = None if duration_ms is None else round(duration_ms)
    return StageSummary.objects.create(app=app, stage_id=stage_id, duration_ms=duration, **values)


def make_recurring_runs(
    template: str, durations: list[list[float | None]], *, names: tuple[str, ...] = (), **fields: Any
) -> list[AnalyzedApp]:
    """One stored run of ``template`` per row of ``durations`` (ms per stage id 0, 1, ...), oldest first, an hour
    apart and ending before NOW, with the runtime the stages' sum and one stage signature; ``fields`` override."""
    runs = []
    for i, row in enumerate(durations):
        end = NOW - dt.timedelta(hours=len(durations) - i)
        runtime = sum(d for d in row if d is not None)
        values: dict[str, Any] = {
            "template": template,
            "stage_signature": "0123456789abcdef",
            "start_time": end - dt.timedelta(milliseconds=runtime),
            "end_time": end,
            "runtime_ms": round(runtime),
        }
        values.update(fields)
        app = make_app(**values)
        for stage_id, duration in enumerate(row):
            name = names[stage_id] if stage_id < len(names) else f"stage {stage_id}"
            add_stage(app, stage_id, duration, name=name)
        runs.append(app)
    return runs


def set_stage_hosts(app: AnalyzedApp, stage_id: int, task_ms: dict[str, list[float]], attempt_id: int = 0) -> Any:
    """Store where a stored stage attempt's successful tasks ran: ``task_ms`` maps each host to its tasks'
    durations, summarized as the analysis does (``analysis.summaries.host_task_times``)."""
    import numpy as np

    from analysis.summaries import host_task_times
    from analyzer.models import StageSummary

    codes = np.concatenate([np.full(len(times), i) for i, times in enumerate(task_ms.values())])
    durations = np.concatenate([np.asarray(times, dtype=np.float64) for times in task_ms.values()])
    summary = host_task_times(codes, durations, list(task_ms))
    StageSummary.objects.filter(app=app, stage_id=stage_id, attempt_id=attempt_id).update(host_task_times=summary)
    return summary
