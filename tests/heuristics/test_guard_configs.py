"""No heuristic raises on any valid configuration, and every invalid guard value is refused when the config loads.

Valid configurations are generated from each Config's declared field types (``heuristics.base``: Count,
PositiveCount, NonNegative, Positive, Headroom; thresholds): every scalar setting at its lowest allowed value, at 1,
at its default and at a large value, every threshold set at its default, all zeros, all negative and all large;
each value alone over the defaults, all guards at their lowest together, and seeded random mixes. Each runs over
apps that stress the edges (no stages, no executors that ran tasks, a stage without tasks, one task, a local app,
a zero-length app, failed tasks, stages and jobs; MapReduce jobs with empty phases, one task, no counters, a zero
block or container size in the job conf) and over a few real sample event logs.
"""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path
from typing import Any

import mapreduce_app_builder
import msgspec.inspect as mi
import pytest
import spark_app_builder
import yaml

from fetchers import spark_eventlog
from heuristics import BUILTINS, ConfigError, Heuristic, HeuristicResult, load_suite
from heuristics.config import DEFAULTS_PATH, build_config, read_yaml
from heuristics.severity import Thresholds

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SAMPLE_NAMES = ("clean_app", "task_retries", "failed_job", "spill")
LARGE_INT = 10**9
LARGE_FLOAT = 1e12
RANDOM_MIXES = 25
GIB = 1 << 30

SPARK_EDGE_APPS: dict[str, dict[str, Any]] = {
    "no stages or jobs": {},
    "local mode, no stages: no executor ran a task": {"master": "local[4]"},
    "a stage without tasks": {"stages": [{"n": 0, "num_tasks": 0}], "jobs": [{"stages": [0]}]},
    "one task": {"stages": [{"tasks": {"duration_ms": 1000}}], "jobs": [{"stages": [0]}]},
    "a zero-length app with a zero-length task": {
        "stages": [{"tasks": {"duration_ms": 0}}],
        "jobs": [{"stages": [0]}],
        "start_ms": 0,
        "end_ms": 0,
    },
    "local mode, tasks on the driver": {
        "master": "local[2]",
        "properties": {"spark.driver.memory": "8g"},
        "executors": [{"id": "driver", "cores": 2, "max_memory": 4 * GIB, "peak": {"JVMHeapMemory": GIB}}],
        "stages": [{"n": 4, "tasks": {"duration_ms": [10, 20, 30, 400_000], "executor": "driver"}}],
        "jobs": [{"stages": [0]}],
    },
    "one busy executor of three, spills, GC and memory failures": {
        "properties": {
            "spark.executor.memory": "16g",
            "spark.driver.memory": "16g",
            "spark.executor.cores": "8",
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.dynamicAllocation.maxExecutors": "0",
            "spark.memory.fraction": "0",
        },
        "executors": [
            {
                "id": "1",
                "cores": 8,
                "max_memory": 8 * GIB,
                "peak": {"JVMHeapMemory": 2 * GIB, "OnHeapUnifiedMemory": 1},
            },
            {"id": "2", "cores": 8, "max_memory": 8 * GIB, "peak": {"JVMHeapMemory": 0}},
            {"id": "3", "cores": 8, "max_memory": 0, "removed_ms": 5, "removed_reason": "Container killed"},
        ],
        "stages": [
            {
                "n": 4,
                "duration_ms": 600_000,
                "tasks": {
                    "duration_ms": [600_000, 1, 0, 1],
                    "executor": "1",
                    "status": ["SUCCESS", "FAILED", "FAILED", "KILLED"],
                    "jvm_gc_time_ms": [500_000, 0, 0, 0],
                    "memory_bytes_spilled": [8 * GIB, 0, 0, 0],
                    "disk_bytes_spilled": [GIB, 0, 0, 0],
                    "input_bytes": [16 * GIB, 0, 0, 0],
                    "shuffle_remote_bytes_read": [0, 0, 0, 0],
                },
                "failures": {1: "java.lang.OutOfMemoryError: Java heap space", 2: "ExecutorLostFailure"},
            },
            {"status": "FAILED", "n": 1, "tasks": {"status": "FAILED", "executor": "2"}, "failures": "OOM"},
        ],
        "jobs": [{"stages": [0, 1], "status": "FAILED", "failure_reason": "Job aborted"}],
    },
    "only failed tasks": {
        "stages": [{"n": 3, "tasks": {"status": "FAILED", "finish_ms": 0}, "failures": "boom"}],
        "jobs": [{"stages": [0], "status": "FAILED"}],
        "stage_counts": {"FAILED": 2},
        "job_counts": {"FAILED": 1},
    },
}

MAPREDUCE_EDGE_APPS: dict[str, dict[str, Any]] = {
    "empty map and reduce phases": {},
    "phases with no tasks": {"maps": {"n": 0}, "reduces": {"n": 0}},
    "one map task, no reduces": {"maps": {"tasks": {"hdfs_bytes_read": 1, "map_output_records": 1}}},
    "one map and one reduce, zero-length and without counters": {
        "maps": {"tasks": {"duration_ms": 0, "has_counters": False}},
        "reduces": {"tasks": {"duration_ms": 0, "shuffle_ms": 0, "sort_ms": 0, "has_counters": False}},
    },
    "a zero block size and container size in the job conf": {
        "conf": {"dfs.blocksize": "0", "mapreduce.map.memory.mb": "0", "mapreduce.reduce.memory.mb": "0"},
        "maps": {"n": 3, "tasks": {"hdfs_bytes_read": [0, 1, 10**12], "physical_memory_bytes": [0, 1, 2]}},
        "reduces": {"n": 2, "tasks": {"reduce_shuffle_bytes": [0, 10**9], "shuffle_ms": 10, "sort_ms": 0}},
    },
    "a failed job with failed and killed tasks": {
        "status": "FAILED",
        "diagnostics": "Task failed task_1\nJob failed as tasks failed.",
        "maps": {"status_counts": {"SUCCEEDED": 1, "FAILED": 1, "KILLED": 1}, "failures": "Error: boom"},
        "reduces": {"n": 0},
    },
    "a killed job": {"status": "KILLED", "maps": {"n": 0}},
}


@cache
def defaults() -> dict[str, Any]:
    return read_yaml(DEFAULTS_PATH)


@cache
def spark_apps() -> tuple[tuple[str, Any], ...]:
    built = [(name, spark_app_builder.build_app(spec)) for name, spec in SPARK_EDGE_APPS.items()]
    for name in SAMPLE_NAMES:
        apps = [o.app for o in spark_eventlog.read_apps(SAMPLES / name) if o.app is not None]
        assert len(apps) == 1, f"sample {name} did not read as one app"
        built += [(f"sample {name}", apps[0])]
    return tuple(built)


@cache
def mapreduce_apps() -> tuple[tuple[str, Any], ...]:
    return tuple((name, mapreduce_app_builder.build_app(spec)) for name, spec in MAPREDUCE_EDGE_APPS.items())


def lowest_allowed(info: mi.IntType | mi.FloatType) -> float | None:
    """The smallest value the field's declared bound allows (a tiny step above an exclusive bound)."""
    if info.ge is not None:
        return info.ge
    if info.gt is not None:
        return info.gt + (1 if isinstance(info, mi.IntType) else 1e-9)
    return None


def candidates(info: mi.Type, default: Any) -> list[Any]:
    """Valid values of one setting: its lowest, 1, its default and large ones (thresholds: four of a kind)."""
    if isinstance(info, mi.CustomType) and issubclass(info.cls, Thresholds):
        return [default, [0, 0, 0, 0], [-1, -1, -1, -1], [LARGE_INT] * 4]
    if isinstance(info, mi.BoolType):
        return [True, False]
    if isinstance(info, mi.LiteralType):
        return list(info.values)
    if isinstance(info, mi.IntType | mi.FloatType):
        low = lowest_allowed(info)
        integer = isinstance(info, mi.IntType)
        high = info.le if info.le is not None else (LARGE_INT if integer else math.inf)
        values = [low, 1, default, LARGE_INT if integer else LARGE_FLOAT, high]
        return [v for v in dict.fromkeys(values) if v is not None and (low is None or v >= low) and v <= high]
    raise AssertionError(f"no generator for a config field of type {info!r}: add one")


def config_fields(cls: type[Heuristic[Any]]) -> list[mi.Field]:
    info = mi.type_info(cls.Config)
    assert isinstance(info, mi.StructType)
    return list(info.fields)


def generated_sections(cls: type[Heuristic[Any]]) -> list[dict[str, Any]]:
    """Valid config sections for one heuristic: defaults, each value alone, all lowest, seeded random mixes."""
    base = {k: v for k, v in defaults()[cls.code].items() if k != "enabled"}
    choices = {f.name: candidates(f.type, base[f.name]) for f in config_fields(cls)}
    sections = [base]
    sections += [{**base, name: value} for name, values in choices.items() for value in values]
    scalars = [f.name for f in config_fields(cls) if isinstance(f.type, mi.IntType | mi.FloatType)]
    sections.append({**base, **{name: choices[name][0] for name in scalars}})  # every guard at its lowest at once
    rng = random.Random(f"guards:{cls.code}")
    sections += [{name: rng.choice(values) for name, values in choices.items()} for _ in range(RANDOM_MIXES)]
    return sections


def apps_for(cls: type[Heuristic[Any]]) -> tuple[tuple[str, Any], ...]:
    return (spark_apps() if "spark" in cls.app_types else ()) + (
        mapreduce_apps() if "mapreduce" in cls.app_types else ()
    )


@pytest.mark.parametrize("cls", list(BUILTINS), ids=lambda cls: cls.code)
def test_no_heuristic_raises_on_any_valid_configuration(cls: type[Heuristic[Any]]) -> None:
    apps = apps_for(cls)
    assert apps, f"{cls.code}: no test apps of its types {cls.app_types}"
    heuristics = [cls(build_config(cls.Config, section, cls.code)) for section in generated_sections(cls)]
    failures: list[str] = []
    for app_name, app in apps:  # app-major: the task table is cached per app
        for heuristic in heuristics:
            try:
                result = heuristic.evaluate(app)
            except Exception as exc:
                failures.append(f"{app_name} with {heuristic.config_as_dict()}: {type(exc).__name__}: {exc}")
                continue
            if not isinstance(result, HeuristicResult):
                failures.append(f"{app_name}: returned {type(result).__name__}")
    assert failures == [], f"{len(failures)} failure(s), first: {failures[:3]}"


def test_the_issue_case_min_executors_0_judges_an_app_whose_executors_ran_no_tasks() -> None:
    cls = BUILTINS.get("spark.executor_balance")
    assert cls is not None
    heuristic = cls(build_config(cls.Config, {**defaults()[cls.code], "min_executors": 0}, cls.code))
    app = spark_app_builder.build_app({"master": "local[2]", "stages": [{"tasks": {"executor": "driver"}}]})
    result = heuristic.evaluate(app)
    assert result.severity == 0
    assert "no executor ran tasks" in " ".join(v for _, v in result.details)


def test_every_scalar_setting_declares_its_lower_bound() -> None:
    """A new guard key must decide whether 0 is meaningful: a bare int or float would accept -1 unnoticed."""
    unbounded = [
        f"{cls.code}.{f.name}"
        for cls in BUILTINS
        for f in config_fields(cls)
        if isinstance(f.type, mi.IntType | mi.FloatType) and lowest_allowed(f.type) is None
    ]
    assert unbounded == []


def below_the_bound() -> list[Any]:
    params = []
    for cls in BUILTINS:
        for f in config_fields(cls):
            if not isinstance(f.type, mi.IntType | mi.FloatType):
                continue
            bound = f.type.ge if f.type.ge is not None else f.type.gt
            assert bound is not None
            bad = bound - 1 if f.type.ge is not None and isinstance(f.type, mi.IntType) else bound - 0.5
            if f.type.gt is not None:
                bad = bound  # the bound itself is refused
            params.append(pytest.param(cls.code, f.name, bad, id=f"{cls.code}.{f.name}={bad}"))
            if f.type.le is not None:
                above = f.type.le + 1
                params.append(pytest.param(cls.code, f.name, above, id=f"{cls.code}.{f.name}={above}"))
            if isinstance(f.type, mi.FloatType):
                params.append(pytest.param(cls.code, f.name, math.nan, id=f"{cls.code}.{f.name}=nan"))
    return params


@pytest.mark.parametrize(("code", "key", "value"), below_the_bound())
def test_a_guard_below_its_lower_bound_stops_loading_naming_the_heuristic_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, key: str, value: float
) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    user_file = tmp_path / "heuristics.yaml"
    user_file.write_text(yaml.safe_dump({code: {key: value}}), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(str(user_file))
    assert str(info.value).startswith(f"{code}.{key}: Expected `")


@pytest.mark.parametrize(
    ("code", "key", "value", "message"),
    [
        ("spark.executor_balance", "min_executors", -1, "spark.executor_balance.min_executors: Expected `int` >= 0"),
        ("mapreduce.mapper_skew", "default_block_size_mib", 0, "mapreduce.mapper_skew.default_block_size_mib: "),
        ("mapreduce.mapper_memory", "container_memory_default_mb", 0, "Expected `int` >= 1"),
        ("mapreduce.mapper_speed", "disk_read_speed_mib_s", 0, "Expected `float` > 0.0"),
        ("mapreduce.exception", "max_text_chars", 0, "mapreduce.exception.max_text_chars: Expected `int` >= 1"),
        ("spark.jvm_memory", "suggested_headroom", 0.9, "spark.jvm_memory.suggested_headroom: Expected `float` >= 1"),
    ],
)
def test_the_keys_where_zero_means_nothing_are_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, key: str, value: float, message: str
) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    user_file = tmp_path / "heuristics.yaml"
    user_file.write_text(yaml.safe_dump({code: {key: value}}), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(str(user_file))
    assert message in str(info.value)


def test_every_guard_at_zero_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys where 0 is meaningful accept it from a user file, as the issue asks of min_executors."""
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    zeros = {
        f"{cls.code}.{f.name}": 0
        for cls in BUILTINS
        for f in config_fields(cls)
        if isinstance(f.type, mi.IntType | mi.FloatType) and lowest_allowed(f.type) == 0
    }
    assert "spark.executor_balance.min_executors" in zeros
    user: dict[str, dict[str, int]] = {}
    for dotted in zeros:
        code, _, key = dotted.rpartition(".")
        user.setdefault(code, {})[key] = 0
    user_file = tmp_path / "heuristics.yaml"
    user_file.write_text(yaml.safe_dump(user), encoding="utf-8")
    suite = load_suite(str(user_file))
    loaded = {f"{h.code}.{key}": value for h in suite.heuristics for key, value in h.config_as_dict().items()}
    assert {dotted: loaded[dotted] for dotted in zeros} == zeros
