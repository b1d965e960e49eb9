"""The replay's real-run harness (benchmarks/impact): a tiny app on a real standalone cluster at one and two
executors, evaluated end to end; and the shipped real logs read back as the runs their manifest says."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "impact"
sys.path.insert(0, str(HARNESS))

import evaluate_replay  # noqa: E402  (scripts beside the benchmark, not a package)
import real_runs  # noqa: E402


def _spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _spark_available():
        pytest.skip("needs pyspark and Java")
    out = tmp_path_factory.mktemp("replay-real")
    real_runs.run_all(out, ["tiny"], [1, 2], warm_up=False)  # start-up dominates: ~1.5-2 min at load 10 on 2 cores
    return evaluate_replay.evaluate(out)


@pytest.mark.spark
def test_each_run_of_the_tiny_app_has_the_executors_it_asked_for(tiny_results: dict[str, Any]) -> None:
    runs = {run["executors"]: run for run in tiny_results["runs"]}
    assert sorted(runs) == [1, 2]
    for count, run in runs.items():
        assert run["diagnosis"]["executors_seen"] == count
        assert run["diagnosis"]["tasks"] == 6  # 4 map tasks, 2 reduce tasks
        assert 0 < run["diagnosis"]["driver_ms"] < run["diagnosis"]["runtime_ms"]


@pytest.mark.spark
def test_each_run_predicts_the_other_count_against_that_runs_measured_runtime(tiny_results: dict[str, Any]) -> None:
    runtime = {run["executors"]: run["diagnosis"]["runtime_ms"] for run in tiny_results["runs"]}
    pairs = {(row["from_executors"], row["to_executors"]): row for row in tiny_results["predictions"]}
    assert sorted(pairs) == [(1, 2), (2, 1)]
    for (_source, target), row in pairs.items():
        assert row["measured_ms"] == runtime[target]
        if tiny_results["replay_available"]:
            assert row["predicted_ms"] > 0
            assert row["error"] == pytest.approx(
                (row["predicted_ms"] - row["measured_ms"]) / row["measured_ms"], abs=1e-3
            )
        else:
            assert row["predicted_ms"] is None


def test_the_shipped_real_logs_are_the_runs_their_manifest_lists() -> None:
    manifest_path = real_runs.OUT / "manifest.json"
    if not manifest_path.exists():
        pytest.skip("no real logs shipped (run benchmarks/impact/real_runs.py)")
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["runs"]:
        app = evaluate_replay.read_app(real_runs.OUT / entry["file"])
        assert app is not None, entry["file"]
        assert app.app_id == entry["app_id"]
        assert evaluate_replay.diagnose(app)["executors_seen"] == entry["executors"]
