"""The independent population of issue 16 (benchmarks/independent): logs Hindsight reads whole, causes whose only
trace is their consequence, a generator that shares nothing with the engine, and an evaluator that reports every
measure of the issue's table through the product's own path."""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from appmodel.spark import SparkApp
from fetchers.spark_eventlog import read_apps
from tests.script_modules import load_script

INDEPENDENT = Path(__file__).resolve().parents[2] / "benchmarks" / "independent"
generate = load_script(INDEPENDENT / "generate.py", "independent_generate")
evaluate = load_script(INDEPENDENT / "evaluate.py", "independent_evaluate")


@pytest.fixture(scope="module")
def population(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("independent")
    manifest = generate.generate(out, scale="small")
    return out, manifest


def _read(path: str) -> SparkApp:
    (outcome,) = list(read_apps(Path(path), []))
    assert outcome.error is None
    assert outcome.app is not None
    return outcome.app


def test_the_generator_imports_nothing_of_the_engine_nor_of_the_other_generators() -> None:
    tree = ast.parse((INDEPENDENT / "generate.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names} | {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    }
    roots = {name.split(".")[0] for name in imported}

    assert not roots & {"analysis", "heuristics", "fetchers", "appmodel", "analyzer", "webui", "benchmarks", "tests"}
    assert not {name for name in imported if "generate" in name or "impact" in name or "attribution" in name}


def test_every_run_reads_as_one_complete_app_with_the_tasks_and_runtime_it_was_written_with(
    population: tuple[Path, dict[str, Any]],
) -> None:
    _, manifest = population
    for run in manifest["runs"][:12]:
        app = _read(run["path"])
        attempts = sum(len(stage.tasks) for stage in app.stages.values())
        assert attempts == run["tasks"]
        assert app.duration_ms == run["runtime_ms"]
        assert app.stats.malformed_lines == 0


def test_the_small_scale_has_every_cause_and_the_log_files_end_when_their_apps_end(
    population: tuple[Path, dict[str, Any]],
) -> None:
    _, manifest = population

    assert {r["cause"] for r in manifest["runs"]} >= set(generate.CAUSES)
    for run in manifest["runs"]:
        assert abs(Path(run["path"]).stat().st_mtime * 1000 - run["end_ms"]) < 5  # the event-log source lists by it


def test_a_slow_host_shows_only_as_longer_tasks_on_its_executor_with_the_bytes_of_its_siblings(
    population: tuple[Path, dict[str, Any]],
) -> None:
    _, manifest = population
    run = next(r for r in manifest["runs"] if r["cause"] == "slow_host" and not r["distractors"])
    app = _read(run["path"])
    slow = set(run["slow_host_executors"])
    per_mb: dict[bool, list[float]] = {True: [], False: []}
    mb: dict[bool, list[float]] = {True: [], False: []}
    for stage in app.stages.values():
        t = stage.tasks
        read = t.input_bytes.astype(float) + t.shuffle_read_bytes.astype(float)
        for code, duration, size in zip(t.executor, t.duration_ms, read, strict=True):
            on_slow = app.executor_ids[code] in slow
            if size > 0:
                per_mb[on_slow].append(float(duration) / size)
                mb[on_slow].append(float(size))

    assert np.median(per_mb[True]) > 1.3 * np.median(per_mb[False])
    assert 0.7 < np.median(mb[True]) / np.median(mb[False]) < 1.4


def test_the_evaluator_runs_the_small_scale_through_the_product_and_reports_every_measure(
    population: tuple[Path, dict[str, Any]],
) -> None:
    logs, _ = population
    database = f"gen2_smoke_{os.getpid()}"
    began = time.monotonic()
    result = evaluate.run(logs, database, logs / "results.json", keep=False)

    for measure in evaluate.MEASURES:
        assert isinstance(result[measure], dict), measure
    for measure in evaluate.SHARES:  # a share with its counts; None only when nothing could be scored
        assert {"value", "hits", "of"} <= set(result[measure]), measure
    causes = result["by_cause"]
    assert sum(c["scored"] + c["immaterial"] + c["unavailable"] for c in causes.values()) == sum(
        c["runs"] for c in causes.values()
    )
    assert result["slow_host_executor_first"]["of"] > 0
    assert result["straggler_windows"]["7d"]["snapshots"] > 0
    assert result["population"]["recurring_runs"] > 0
    assert orjson.loads((logs / "results.json").read_bytes())["database"] == database
    assert time.monotonic() - began < 180  # generous: a smoke test, not a timing
