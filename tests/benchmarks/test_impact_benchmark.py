"""The impact benchmark's apps are logs Hindsight reads whole, and its evaluator judges them end to end through
``manage.py analyze`` (issue 14)."""

from __future__ import annotations

import ast
from pathlib import Path

import orjson
import pytest

from appmodel.spark import SparkApp
from fetchers.spark_eventlog import read_apps
from tests.script_modules import load_script

IMPACT = Path(__file__).resolve().parents[2] / "benchmarks" / "impact"
generate = load_script(IMPACT / "generate.py", "impact_generate")
evaluate = load_script(IMPACT / "evaluate.py", "impact_evaluate")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("impact")
    generate.generate(out, templates=1, seeds=1)
    return out


def _read(path: Path) -> SparkApp:
    (outcome,) = list(read_apps(path, []))
    assert outcome.error is None
    assert outcome.app is not None
    return outcome.app


def test_each_run_reads_as_one_complete_app_with_the_tasks_executors_and_runtime_it_was_written_with(
    logs: Path,
) -> None:
    runs = orjson.loads((logs / "manifest.json").read_bytes())["runs"]

    assert [run["problem"] for run in runs] == list(generate.PROBLEMS)
    for run in runs:
        app = _read(Path(run["path"]))
        attempts = sum(len(stage.tasks) for stage in app.stages.values())
        assert attempts == run["tasks"] + run["failed_attempts"]
        assert app.duration_ms == run["runtime_ms"]
        assert len(app.jobs) == run["jobs"]
        assert app.stats.malformed_lines == 0
        assert len(set(app.executors) - {"driver"}) >= min(run["executors"], 2)


def test_every_problem_costs_time_against_its_clean_twin_and_fewer_executors_halves_the_cluster(logs: Path) -> None:
    runs = {run["problem"]: run for run in orjson.loads((logs / "manifest.json").read_bytes())["runs"]}

    assert runs["clean"]["true_cost_ms"] == 0
    for problem in ("skew", "gc", "spill", "fewer_executors"):
        assert runs[problem]["true_cost_ms"] > 0, problem
    assert runs["failures"]["failed_attempts"] > 0
    assert runs["fewer_executors"]["executors"] == runs["clean"]["executors"] // 2


def test_a_twin_with_no_problem_injected_runs_exactly_as_long_as_the_clean_run(tmp_path: Path) -> None:
    template = generate.build_template(3)
    clean = generate.write_run(tmp_path, generate.plan_run(template, 0, "clean"), 0)
    twin = generate.write_run(tmp_path, generate.plan_run(template, 0, "nothing"), 1)

    assert twin["runtime_ms"] == clean["runtime_ms"]
    assert twin["tasks"] == clean["tasks"]


def test_the_evaluator_judges_every_run_through_the_analyze_command(logs: Path) -> None:
    manifest = orjson.loads((logs / "manifest.json").read_bytes())
    records = evaluate.analyze([run["path"] for run in manifest["runs"]], batch=3)
    result = evaluate.judge(manifest["runs"], records)

    assert result["analyzed"] == len(manifest["runs"])
    assert not result["unmatched_logs"]
    assert set(result["problems"]) == set(generate.PROBLEMS)
    for problem in ("skew", "gc", "spill", "failures"):
        entry = result["problems"][problem]
        assert 0 <= entry["detected_at_least_moderate"] <= 1
        assert entry["headline_rank"] == evaluate.NOT_AVAILABLE or "leads_headline" in entry
    assert 0 <= result["problems"]["clean"]["with_any_severe"] <= 1


def test_the_generator_is_independent_of_the_engine_it_benchmarks() -> None:
    tree = ast.parse((IMPACT / "generate.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names} | {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    }

    assert not {name for name in imported if name.split(".")[0] in {"analysis", "heuristics", "fetchers"}}
