"""Stored recurring-job histories for the slowdown-attribution tests: a few templates of runs whose runtime follows
their input, built with the shared factories (fast: one app and one stage row per run)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
from factories import NOW, make_app

from analyzer.models import AnalyzedApp, Cluster, StageSummary

GB = 1024**3


def stored_run(
    template: str,
    *,
    runtime_s: float,
    input_bytes: float,
    end: dt.datetime,
    cluster: Cluster | None = None,
    metrics: dict[str, Any] | None = None,
    stage: dict[str, Any] | None = None,
    **fields: Any,
) -> AnalyzedApp:
    """One successful run of ``template`` with one stage reading ``input_bytes`` (``metrics`` and ``stage``: values
    that replace the usual ones in the app's metrics and its stage row)."""
    app = make_app(
        template=template,
        runtime_ms=int(runtime_s * 1000),
        start_time=end - dt.timedelta(seconds=runtime_s),
        end_time=end,
        cluster=cluster,
        job_type="Spark",
        metrics={
            "num_tasks": 100,
            "num_stages": 1,
            "num_executors": 4,
            "first_task_delay_ms": 2000,
            **(metrics or {}),
        },
        **fields,
    )
    row: dict[str, Any] = {
        "stage_id": 0,
        "num_tasks": 100,
        "num_complete_tasks": 100,
        "input_bytes": int(input_bytes),
        "executor_run_time_ms": int(runtime_s * 4000),
        "jvm_gc_time_ms": int(runtime_s * 80),
        "task_duration_quantiles": [1000.0, 1800.0, 2000.0, 2200.0, 3000.0],
    }
    StageSummary.objects.create(app=app, **{**row, **(stage or {})})
    return app


def recurring_history(
    templates: int = 10, runs: int = 12, *, seed: int = 0, cluster: Cluster | None = None
) -> dict[str, list[AnalyzedApp]]:
    """``templates`` x ``runs`` ordinary runs ended over the days before NOW: runtime proportional to input."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[AnalyzedApp]] = {}
    for t in range(templates):
        usual_input, usual_runtime = GB * (t + 1), 300.0 * (t + 1)
        name = f"spark:airflow:dag_{t}/task"
        out[name] = []
        for r in range(runs):
            factor = float(rng.lognormal(0, 0.15))
            end = NOW - dt.timedelta(days=r + 1, minutes=7 * t)
            runtime = usual_runtime * factor * float(rng.lognormal(0, 0.02))
            out[name].append(
                stored_run(name, runtime_s=runtime, input_bytes=usual_input * factor, end=end, cluster=cluster)
            )
    return out
