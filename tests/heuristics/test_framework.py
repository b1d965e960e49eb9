from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from spark_app_builder import build_app

import heuristics
from appmodel.spark import Executor, SparkApp, StageAttempt, TaskColumns
from heuristics import ConfigError, Heuristic, HeuristicResult, Registry, RegistryError, Severity, Thresholds
from heuristics.base import HELP_SECTIONS
from heuristics.config import DEFAULTS_PATH
from heuristics.severity import is_four_levels
from heuristics.units import format_bytes, format_duration, parse_size


@pytest.fixture(autouse=True)
def no_user_file_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)


def user_file(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "heuristics.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def config_error(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        heuristics.load_suite(user_file(tmp_path, data))
    return str(info.value)


# Configuration


def test_an_unknown_key_is_rejected_naming_it(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"spark.executor_gc": {"gc_ratoi": [1, 2, 3, 4]}})
    assert message.startswith("spark.executor_gc.gc_ratoi: unknown key")


def test_an_unknown_heuristic_is_rejected_naming_it(tmp_path: Path) -> None:
    assert config_error(tmp_path, {"spark.executor_gcc": {}}).startswith("spark.executor_gcc: unknown heuristic")


def test_a_wrong_type_is_rejected_naming_the_key(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"spark.executor_gc": {"min_task_time_min": "five"}})
    assert message.startswith("spark.executor_gc.min_task_time_min: Expected `float`, got `str`")


def test_thresholds_out_of_order_are_rejected_naming_the_key(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"spark.executor_gc": {"gc_ratio": [0.2, 0.1, 0.15, 0.08]}})
    assert message.startswith("spark.executor_gc.gc_ratio: thresholds must be in ascending order")


def test_descending_thresholds_must_descend(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"spark.unified_memory": {"peak_to_max": [0.2, 0.4, 0.6, 0.7]}})
    assert message.startswith("spark.unified_memory.peak_to_max: thresholds must be in descending order")


def test_thresholds_need_exactly_four_values(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"spark.executor_gc": {"gc_ratio": [0.1, 0.2, 0.3]}})
    assert message.startswith("spark.executor_gc.gc_ratio: expected 4 values")


def test_thresholds_accept_fractions_but_never_evaluate_code(tmp_path: Path) -> None:
    suite = heuristics.load_suite(user_file(tmp_path, {"spark.executor_gc": {"gc_ratio": ["1/16", "1/8", 0.15, 1]}}))
    gc = suite.get("spark.executor_gc")
    assert gc is not None
    assert gc.config_as_dict()["gc_ratio"] == [0.0625, 0.125, 0.15, 1]
    message = config_error(tmp_path, {"spark.executor_gc": {"gc_ratio": ["__import__('os')", 1, 2, 3]}})
    assert message.startswith("spark.executor_gc.gc_ratio: expected a number or a fraction")


def test_a_non_boolean_enabled_flag_is_rejected(tmp_path: Path) -> None:
    assert config_error(tmp_path, {"spark.spill": {"enabled": "no"}}).startswith("spark.spill.enabled:")


def test_a_malformed_user_file_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("spark.spill: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.yaml: not valid YAML"):
        heuristics.load_suite(str(path))


def test_a_missing_user_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        heuristics.load_suite(str(tmp_path / "absent.yaml"))


def test_a_disabled_heuristic_is_left_out(tmp_path: Path) -> None:
    suite = heuristics.load_suite(user_file(tmp_path, {"spark.spill": {"enabled": False}}))
    codes = [h.code for h in suite.heuristics]
    assert "spark.spill" not in codes
    assert "spark.executor_gc" in codes


def test_the_user_file_is_read_from_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_HEURISTICS_FILE", user_file(tmp_path, {"spark.spill": {"enabled": False}}))
    assert heuristics.load_suite().get("spark.spill") is None


def test_an_override_changes_only_the_keys_it_names(tmp_path: Path) -> None:
    suite = heuristics.load_suite(user_file(tmp_path, {"spark.executor_gc": {"min_task_time_min": 1}}))
    gc = suite.get("spark.executor_gc")
    assert gc is not None
    assert gc.config_as_dict()["min_task_time_min"] == 1
    default = heuristics.load_suite().get("spark.executor_gc")
    assert default is not None
    assert gc.config_as_dict()["gc_ratio"] == default.config_as_dict()["gc_ratio"]


def test_every_default_round_trips_through_a_user_file(tmp_path: Path) -> None:
    defaults = heuristics.load_suite()
    dumped = {h.code: h.config_as_dict() for h in defaults.heuristics}
    reloaded = heuristics.load_suite(user_file(tmp_path, dumped))
    assert [h.config for h in reloaded.heuristics] == [h.config for h in defaults.heuristics]


def test_defaults_have_one_section_per_builtin_heuristic() -> None:
    sections = yaml.safe_load(DEFAULTS_PATH.read_text(encoding="utf-8"))
    sections.pop("profiles", None)  # the profile overlays, checked by tests/heuristics/test_profiles.py
    assert sorted(sections) == sorted(cls.code for cls in heuristics.BUILTINS)


# Registry and custom heuristics


def test_a_custom_heuristic_is_loaded_by_dotted_path(tmp_path: Path) -> None:
    custom = [{"path": "example_custom_heuristics.ManyStages", "config": {"stage_count": [1, 2, 3, 4]}}]
    suite = heuristics.load_suite(user_file(tmp_path, {"custom": custom}))
    assert suite.heuristics[-1].code == "example.many_stages"
    results = {r.code: r for r in suite.evaluate(build_app({"stages": [{}, {}, {}]}))}
    assert results["example.many_stages"].severity == Severity.SEVERE


def test_a_custom_heuristic_that_cannot_be_imported_is_rejected(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"custom": [{"path": "example_custom_heuristics.Missing"}]})
    assert message.startswith("custom[0].path: cannot import")


def test_a_custom_heuristic_config_error_names_the_key(tmp_path: Path) -> None:
    custom = [{"path": "example_custom_heuristics.ManyStages", "config": {"stage_count": [4, 3, 2, 1]}}]
    assert config_error(tmp_path, {"custom": custom}).startswith("custom[0].config.stage_count: thresholds must")


def test_a_custom_heuristic_reusing_a_builtin_code_is_rejected(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"custom": [{"path": "example_custom_heuristics.Impostor"}]})
    assert message.startswith("custom[0].path: duplicate heuristic code 'spark.executor_gc'")


def test_registering_a_duplicate_code_raises() -> None:
    from example_custom_heuristics import Impostor, ManyStages

    registry = Registry((ManyStages,))
    with pytest.raises(RegistryError, match=r"duplicate heuristic code 'example\.many_stages'"):
        registry.add(type("Again", (ManyStages,), {"__doc__": "Again."}))
    assert Impostor.code in heuristics.BUILTINS


def test_the_builtin_registry_is_frozen_after_loading() -> None:
    from example_custom_heuristics import ManyStages

    with pytest.raises(RegistryError, match="frozen"):
        heuristics.register(ManyStages)


def test_a_heuristic_that_raises_does_not_break_the_others(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    custom = [{"path": "example_custom_heuristics.Broken"}, {"path": "example_custom_heuristics.ManyStages"}]
    suite = heuristics.load_suite(user_file(tmp_path, {"custom": custom}))

    results = {r.code: r for r in suite.evaluate(build_app({"stages": [{}]}))}

    assert results["example.broken"].severity == Severity.NONE
    assert "ZeroDivisionError: boom" in results["example.broken"].details[0][1]
    assert "example.many_stages" in results
    assert len(results) == len(suite.applicable(build_app({"stages": [{}]})))
    assert "example.broken failed" in caplog.text


# Severity and scores


def test_thresholds_are_inclusive_in_both_directions() -> None:
    rising = Thresholds(1, 2, 3, 4)
    falling = Thresholds(4, 3, 2, 1, ascending=False)
    assert [rising.severity_of(v) for v in (0.99, 1, 2, 3.5, 4)] == [0, 1, 2, 3, 4]
    assert [falling.severity_of(v) for v in (4.01, 4, 3, 1.5, 1)] == [0, 1, 2, 3, 4]
    assert rising.severities_of([0.99, 1, 2, 3.5, 4, float("nan")]).tolist() == [0, 1, 2, 3, 4, 0]
    assert falling.severities_of([4.01, 4, 3, 1.5, 1]).tolist() == [0, 1, 2, 3, 4]


def test_severity_labels_read_as_dr_elephant_shows_them() -> None:
    assert [s.label for s in Severity] == ["None", "Low", "Moderate", "Severe", "Critical"]


def test_score_counts_tasks_only_from_moderate_up() -> None:
    assert [heuristics.score_of(s, 10) for s in Severity] == [0, 0, 20, 30, 40]


def test_app_severity_is_the_max_and_app_score_the_sum() -> None:
    def result(severity: Severity, score: int) -> HeuristicResult:
        return HeuristicResult("x", "X", severity, score, [], "", {}, {}, [], [])

    results = [result(Severity.LOW, 0), result(Severity.SEVERE, 30), result(Severity.MODERATE, 4)]
    assert heuristics.app_severity(results) == Severity.SEVERE
    assert heuristics.app_score(results) == 34
    assert heuristics.app_severity([]) == Severity.NONE


def test_every_builtin_heuristic_has_a_complete_help_page() -> None:
    for heuristic in heuristics.load_suite().heuristics:
        for section in (*HELP_SECTIONS, "Differences from Dr. Elephant"):
            assert f"{section}:" in heuristic.help_text, f"{heuristic.code} lacks {section}"
        assert heuristic.help_text.splitlines()[0].endswith(".")


# Units


def test_spark_size_strings_parse_like_spark() -> None:
    assert parse_size("4g") == 4 << 30
    assert parse_size("512m") == 512 << 20
    assert parse_size("2048") == 2048 << 20
    assert parse_size("1t") == 1 << 40
    assert parse_size("100k") == 100 << 10
    assert parse_size(" 8GB ") == 8 << 30
    for garbage in ("", "lots", "4x", "-1g", "1e9"):
        with pytest.raises(ValueError, match="size"):
            parse_size(garbage)


def test_values_are_formatted_for_people() -> None:
    assert format_duration(192_000) == "3 min 12 s"
    assert format_duration(850) == "850 ms"
    assert format_duration(7_500_000) == "2 h 5 min"
    assert format_bytes(3 << 30) == "3.00 GiB"
    assert format_bytes(512 << 20) == "512.00 MiB"


# Robustness and scale


def test_builtin_heuristics_handle_odd_data_without_errors() -> None:
    app = build_app(
        {
            "properties": {
                "spark.executor.memory": "much",
                "spark.driver.memory": "-3g",
                "spark.executor.cores": "four",
                "spark.executor.memoryOverhead": "",
                "spark.dynamicAllocation.enabled": "yes",
                "spark.memory.fraction": "most",
            },
            "executors": [{"id": "1", "cores": -2, "added_ms": 5, "removed_ms": 1}],
            "stages": [
                {"n": 0},
                {"tasks": {"duration_ms": [0, 0], "status": ["FAILED", "KILLED"]}, "failures": {7: "x"}},
            ],
            "jobs": [{"id": 0, "status": "FAILED", "stages": [99]}],
        }
    )
    app.stages[(5, 0)] = StageAttempt(stage_id=5, attempt_id=0)  # no tasks at all
    app.executors["driver"] = Executor(executor_id="driver", peak_metrics={"JVMHeapMemory": -1})

    results = heuristics.load_suite().evaluate(app)

    assert [r for r in results if "error" in r.observed] == []
    assert len(results) == len(heuristics.load_suite().applicable(app))


def test_an_empty_app_gives_a_result_for_every_heuristic() -> None:
    suite = heuristics.load_suite()
    app = SparkApp(app_id="empty")
    results = suite.evaluate(app)
    assert [r.code for r in results] == [h.code for h in suite.applicable(app)]
    assert [r for r in results if "error" in r.observed] == []


def test_a_million_task_app_evaluates_without_errors() -> None:
    # Its speed is measured in benchmarks/, not here.
    rng = np.random.default_rng(7)
    app = build_app({"executors": [{"id": str(i), "cores": 4, "added_ms": 0} for i in range(1, 201)]})
    for stage_id in range(200):
        n = 5000
        columns = {
            "task_id": np.arange(n) + stage_id * n,
            "executor": rng.integers(0, 200, n),
            "launch_ms": np.zeros(n, dtype=np.int64),
            "duration_ms": rng.integers(1, 10_000, n),
            "jvm_gc_time_ms": rng.integers(0, 500, n),
            "input_bytes": rng.integers(0, 1 << 28, n),
            "shuffle_write_bytes": rng.integers(0, 1 << 26, n),
            "memory_bytes_spilled": rng.integers(0, 1 << 20, n),
            "status": (rng.random(n) < 0.01).astype(np.int8),
        }
        columns["finish_ms"] = columns["duration_ms"]
        tasks = TaskColumns.from_columns(columns, {0: "java.lang.OutOfMemoryError"})
        app.stages[(stage_id, 0)] = StageAttempt(stage_id=stage_id, attempt_id=0, num_tasks=n, tasks=tasks)
    app.end_ms = 3_600_000
    suite = heuristics.load_suite()

    results = suite.evaluate(app)

    assert len(results) == len(suite.applicable(app))
    assert [r for r in results if "error" in r.observed] == []


def test_heuristic_instances_reject_a_config_of_another_type() -> None:
    gc = heuristics.load_suite().get("spark.executor_gc")
    spill = heuristics.load_suite().get("spark.spill")
    assert gc is not None
    assert spill is not None
    with pytest.raises(TypeError):
        type(gc)(spill.config)
    assert isinstance(gc, Heuristic)


def test_configs_survive_pickling_for_worker_processes() -> None:
    import pickle

    suite = heuristics.load_suite()
    copies = pickle.loads(pickle.dumps(suite))
    assert [h.config for h in copies.heuristics] == [h.config for h in suite.heuristics]


def test_the_configured_suite_is_loaded_once_and_again_when_its_file_changes(tmp_path: Path) -> None:
    overrides = tmp_path / "heuristics.yaml"
    overrides.write_text("spark.spill:\n  enabled: false\n")

    first = heuristics.configured_suite(str(overrides))
    assert heuristics.configured_suite(str(overrides)) is first
    assert first.get("spark.spill") is None

    overrides.write_text("spark.stage_runtime:\n  enabled: false\n")
    os.utime(overrides, ns=(overrides.stat().st_mtime_ns + 10**9,) * 2)
    changed = heuristics.configured_suite(str(overrides))

    assert changed is not first
    assert changed.get("spark.spill") is not None
    assert changed.get("spark.stage_runtime") is None


@pytest.mark.parametrize(
    "value", [[1, 2, 3, 4], (0.5, 0.25, 0.125, 0.03125), [10, 4, 2, 1.5], Thresholds(1, 2, 3, 4).as_config()]
)
def test_four_finite_numbers_are_four_threshold_levels(value: Any) -> None:
    assert is_four_levels(value)


@pytest.mark.parametrize(
    "value",
    [[1, 2, 3], [1, 2, 3, 4, 5], [True, False, True, False], [1, 2, 3, True], ["1", "2", "3", "4"],
     [1, 2, 3, float("nan")], [1, 2, 3, float("inf")], [1, 2, 3, "inf"], [1, 2, 3, None], "1, 2, 3, 4",
     {"low": 1, "moderate": 2, "severe": 3, "critical": 4}, 4, None],
)  # fmt: skip
def test_anything_else_is_a_setting_not_threshold_levels(value: Any) -> None:
    assert not is_four_levels(value)


def test_every_configured_threshold_is_four_levels_and_no_other_setting_is() -> None:
    for heuristic in heuristics.load_suite().heuristics:
        for name, value in heuristic.config_as_dict().items():
            is_threshold = isinstance(getattr(heuristic.config, name), Thresholds)
            assert is_four_levels(value) == is_threshold, (heuristic.code, name, value)
