"""Each built-in heuristic that fires says what to change, with values computed from the app (heuristics.Change).

Every expected value below is the heuristic's help-page formula worked by hand on the app the test builds.
"""

from __future__ import annotations

import math
from typing import Any

import mapreduce_app_builder
import pytest
import spark_app_builder

from appmodel.formatting import setting_mebibytes, setting_size
from appmodel.units import GIB, MIB, parse_size
from heuristics import HeuristicResult, Severity, Suite, load_suite
from heuristics.changes import failure_kind, suggested_memory, with_xmx, xmx_bytes


@pytest.fixture(scope="module")
def suite() -> Suite:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
        return load_suite()


def run(suite: Suite, code: str, spec: dict[str, Any]) -> HeuristicResult:
    build = mapreduce_app_builder.build_app if code.startswith("mapreduce.") else spark_app_builder.build_app
    app = build(spec)
    (result,) = [r for r in suite.evaluate(app) if r.code == code]
    return result


def values(result: HeuristicResult) -> dict[str, str]:
    return {c.property: c.value for c in result.changes}


SHUFFLE = int(13.7 * GIB)  # 13.7 GiB of shuffle over 6,000 tasks


def small_tasks_app(*, sql: bool, properties: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "properties": properties or {},
        "jobs": [{"id": 0, "stages": [0], **({"sql": 1} if sql else {})}],
        "stages": [{"n": 6000, "tasks": {"duration_ms": 50, "shuffle_local_bytes_read": SHUFFLE // 6000}}],
    }


# ---- helpers -------------------------------------------------------------------------------------------------


def test_sizes_are_written_as_users_type_them() -> None:
    assert setting_size(6 * GIB) == "6g"
    assert setting_size(4608 * MIB) == "4608m"
    assert setting_size(4608 * MIB + 1) == "4609m"  # rounded up, never below
    assert setting_mebibytes(2560 * MIB) == "2560"


def test_suggested_memory_rounds_up_and_never_goes_below_what_was_needed() -> None:
    assert suggested_memory(5 * GIB * 1.2) == 6 * GIB
    assert suggested_memory(1 * GIB, at_least=3 * GIB + 1) == 3 * GIB + 512 * MIB
    assert suggested_memory(1 * GIB, above=4 * GIB) == 4 * GIB + 512 * MIB  # tasks died at 4g: more than that
    assert suggested_memory(9.2 * GIB) == 10 * GIB  # whole GiB above 8 GiB


def test_xmx_is_replaced_in_java_opts_and_other_options_are_kept() -> None:
    assert xmx_bytes("-server -Xmx2048m -XX:+UseG1GC") == 2048 * MIB
    assert with_xmx("-server -Xmx2048m -XX:+UseG1GC", 3 * GIB) == "-server -Xmx3072m -XX:+UseG1GC"
    assert with_xmx(None, GIB) == "-Xmx1024m"


def test_failure_kind_names_the_python_error_inside_a_python_exception() -> None:
    text = "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n  ...\nValueError: bad"
    assert failure_kind(text) == "ValueError"
    assert failure_kind("java.lang.OutOfMemoryError: Java heap space\n\tat x.y") == "java.lang.OutOfMemoryError"
    assert failure_kind("FetchFailed(BlockManagerId(1, host, 7337), shuffleId=0)") == "FetchFailed"


# ---- Spark partitions ----------------------------------------------------------------------------------------


def test_6000_tiny_tasks_over_13_7_gib_of_shuffle_get_220_shuffle_partitions(suite: Suite) -> None:
    result = run(suite, "spark.small_tasks", small_tasks_app(sql=True))
    assert result.severity == Severity.CRITICAL
    expected = math.ceil(6000 * (SHUFFLE // 6000) / (64 * MIB))
    assert expected == 220
    assert values(result)["spark.sql.shuffle.partitions"] == "220"
    assert "220" in result.advice


def test_the_apps_own_advisory_partition_size_is_the_target(suite: Suite) -> None:
    app = small_tasks_app(sql=True, properties={"spark.sql.adaptive.advisoryPartitionSizeInBytes": "128m"})
    assert values(run(suite, "spark.small_tasks", app))["spark.sql.shuffle.partitions"] == "110"


def test_aqe_coalescing_is_turned_on_for_a_sql_stage_when_it_was_off(suite: Suite) -> None:
    off = small_tasks_app(sql=True, properties={"spark.sql.adaptive.coalescePartitions.enabled": "false"})
    assert values(run(suite, "spark.small_tasks", off))["spark.sql.adaptive.coalescePartitions.enabled"] == "true"
    on = values(run(suite, "spark.small_tasks", small_tasks_app(sql=True)))  # Spark 3.5: AQE on by default
    assert "spark.sql.adaptive.coalescePartitions.enabled" not in on


def test_an_rdd_stage_is_told_to_coalesce_in_code(suite: Suite) -> None:
    result = run(suite, "spark.small_tasks", small_tasks_app(sql=False))
    assert [(c.property, c.value) for c in result.changes] == [("coalesce stage 0", "coalesce(220)")]


def test_a_stage_of_even_huge_partitions_gets_more_partitions(suite: Suite) -> None:
    per_task = 2 * GIB
    app = {
        "jobs": [{"id": 0, "stages": [0], "sql": 1}],
        "stages": [{"n": 10, "tasks": {"duration_ms": 60_000, "shuffle_local_bytes_read": per_task}}],
    }
    result = run(suite, "spark.large_partition", app)
    assert result.severity >= Severity.MODERATE
    assert values(result)["spark.sql.shuffle.partitions"] == str(math.ceil(10 * per_task / (64 * MIB)))


def test_a_hot_partition_of_an_rdd_stage_is_salted_and_named_with_its_bytes(suite: Suite) -> None:
    read = [5 * GIB] + [10 * MIB] * 9
    app = {"stages": [{"tasks": {"duration_ms": 60_000, "shuffle_local_bytes_read": read}}]}
    result = run(suite, "spark.large_partition", app)
    (change,) = result.changes
    assert change.property == "salt the key of stage 0"
    assert "5.00 GiB" in change.value


def test_a_long_stage_of_too_few_partitions_gets_more(suite: Suite) -> None:
    app = {
        "jobs": [{"id": 0, "stages": [0], "sql": 1}],
        "stages": [{"n": 4, "duration_ms": 40 * 60_000, "tasks": {"duration_ms": 2_000_000, "input_bytes": GIB}}],
    }
    result = run(suite, "spark.stage_runtime", app)
    assert values(result) == {"spark.sql.files.maxPartitionBytes": "64m"}


def test_spill_with_small_partitions_asks_for_fewer_cores_per_executor(suite: Suite) -> None:
    # 8g heap, 4 cores, fraction 0.6: (8192 - 300) MiB x 0.6 = 4735 MiB of execution memory, 1184 MiB per task;
    # each spilling task needed 2 GiB (1 GiB peak + 1 GiB spilled), so floor(4735 / 2048) = 2 cores fit.
    app = {
        "properties": {"spark.executor.memory": "8g", "spark.executor.cores": "4"},
        "stages": [
            {
                "n": 100,
                "tasks": {
                    "duration_ms": 10_000,
                    "shuffle_local_bytes_read": 32 * MIB,
                    "peak_execution_memory": GIB,
                    "memory_bytes_spilled": GIB,
                },
            }
        ],
    }
    result = run(suite, "spark.spill", app)
    assert values(result) == {"spark.executor.cores": "2"}


# ---- Spark memory --------------------------------------------------------------------------------------------


def long_app(properties: dict[str, str], peak: dict[str, int], **stage: Any) -> dict[str, Any]:
    return {
        "properties": properties,
        "executors": [{"id": "1", "cores": 4, "max_memory": 8 * GIB, "peak": peak}],
        "stages": [{"n": 10, "tasks": {"duration_ms": 60_000, "executor": "1", **stage}}],
    }


def test_an_oversized_heap_is_lowered_to_its_peak_with_headroom_never_below_it(suite: Suite) -> None:
    result = run(suite, "spark.jvm_memory", long_app({"spark.executor.memory": "16g"}, {"JVMHeapMemory": 5 * GIB}))
    assert result.severity >= Severity.MODERATE
    value = values(result)["spark.executor.memory"]
    assert value == "6g"  # 5 GiB x 1.2
    assert parse_size(value, "m") >= 5 * GIB


def test_unused_unified_memory_is_lowered_but_not_below_the_heap_peak(suite: Suite) -> None:
    peak = {"OnHeapUnifiedMemory": GIB, "JVMHeapMemory": 6 * GIB}
    result = run(suite, "spark.unified_memory", long_app({"spark.executor.memory": "16g"}, peak))
    assert result.severity >= Severity.MODERATE
    value = parse_size(values(result)["spark.executor.memory"], "m")
    assert value == suggested_memory(6 * GIB * 1.2)  # the heap peak, not 1 GiB x 1.2 / 0.6 + 300 MiB
    assert 6 * GIB <= value < 16 * GIB


def test_out_of_memory_tasks_get_more_heap_than_they_died_with(suite: Suite) -> None:
    app = long_app({"spark.executor.memory": "4g"}, {"JVMHeapMemory": 3 * GIB}, status=["SUCCESS"] * 9 + ["FAILED"])
    app["stages"][0]["failures"] = "java.lang.OutOfMemoryError: Java heap space"
    result = run(suite, "spark.memory_failures", app)
    assert values(result) == {"spark.executor.memory": "6g"}  # 4 GiB x 1.5, above the 4g that failed


def test_containers_killed_for_memory_get_more_overhead(suite: Suite) -> None:
    app = long_app({"spark.executor.memory": "4g"}, {}, status=["SUCCESS"] * 9 + ["FAILED"])
    app["stages"][0]["failures"] = "Container killed by YARN for exceeding physical memory limits"
    result = run(suite, "spark.memory_failures", app)
    # overhead unset: max(384 MiB, 10% of 4 GiB) = 409.6 MiB; max(x 1.5, + 409.6 MiB) = 819.2 MiB -> 1g
    assert values(result) == {"spark.executor.memoryOverhead": "1g"}


def test_gc_bound_executors_get_half_again_as_much_heap(suite: Suite) -> None:
    app = long_app({"spark.executor.memory": "4g"}, {"JVMHeapMemory": 3 * GIB}, jvm_gc_time_ms=20_000)
    result = run(suite, "spark.executor_gc", app)
    assert values(result) == {"spark.executor.memory": "6g"}


# ---- Spark skew, failures, configuration, idle ----------------------------------------------------------------


def test_a_skewed_sql_stage_with_aqe_off_turns_on_aqe_and_its_skew_join(suite: Suite) -> None:
    app = {
        "properties": {"spark.sql.adaptive.enabled": "false"},
        "jobs": [{"id": 0, "stages": [0], "sql": 1}],
        "stages": [{"tasks": {"duration_ms": [600_000] + [10_000] * 9}}],
    }
    result = run(suite, "spark.task_skew", app)
    assert values(result) == {"spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.skewJoin.enabled": "true"}


def test_stage_failures_name_the_most_common_exception_and_its_stage(suite: Suite) -> None:
    app = {
        "stages": [
            {"status_counts": {"SUCCESS": 7, "FAILED": 3}, "failures": "java.io.IOException: disk full"},
            {"id": 4, "status_counts": {"SUCCESS": 5, "FAILED": 5}, "failures": "java.lang.NullPointerException"},
        ]
    }
    result = run(suite, "spark.stage_failures", app)
    (change,) = result.changes
    assert (change.property, change.value) == ("fix the failure in stage 4", "java.lang.NullPointerException")


def test_max_failures_is_raised_only_when_a_job_used_its_attempts_on_fetch_failures(suite: Suite) -> None:
    reason = "Job aborted: Task 0 in stage 0.0 failed 4 times, most recent failure: FetchFailed(BlockManagerId(1))"
    app = {
        "jobs": [{"id": 0, "stages": [0], "status": "FAILED", "failure_reason": reason}],
        "stages": [{"status": "FAILED", "status_counts": {"FAILED": 4}, "failures": "FetchFailed(BlockManagerId(1))"}],
    }
    assert values(run(suite, "spark.job_failures", app))["spark.task.maxFailures"] == "8"
    app["jobs"][0]["failure_reason"] = reason.replace("FetchFailed(BlockManagerId(1))", "java.lang.ArithmeticException")
    assert "spark.task.maxFailures" not in values(run(suite, "spark.job_failures", app))


def test_the_java_serializer_is_replaced_by_the_kryo_class(suite: Suite) -> None:
    result = run(suite, "spark.configuration", {"master": "local[2]", "stages": [{}]})
    assert values(result) == {"spark.serializer": "org.apache.spark.serializer.KryoSerializer"}


def test_idle_executors_without_dynamic_allocation_get_it(suite: Suite) -> None:
    app = {
        "executors": [{"id": "1", "cores": 8, "added_ms": 0}],
        "end_ms": 3_600_000,
        "stages": [{"tasks": {"duration_ms": 60_000, "executor": "1"}}],
    }
    result = run(suite, "spark.idle_cores", app)
    assert values(result)["spark.dynamicAllocation.enabled"] == "true"


# ---- MapReduce -----------------------------------------------------------------------------------------------


def test_oversized_map_containers_shrink_to_the_largest_task_with_headroom(suite: Suite) -> None:
    app = {
        "conf": {"mapreduce.map.memory.mb": "8192", "mapreduce.map.java.opts": "-Xmx6553m -XX:+UseG1GC"},
        "maps": {"n": 10, "tasks": {"physical_memory_bytes": [GIB] * 9 + [2 * GIB]}},
    }
    result = run(suite, "mapreduce.mapper_memory", app)
    changed = values(result)
    assert changed["mapreduce.map.memory.mb"] == "2560"  # 2 GiB x 1.2 = 2458 MiB, up to 512 MiB steps
    assert changed["mapreduce.map.java.opts"] == "-Xmx2048m -XX:+UseG1GC"  # 80% of 2560
    assert int(changed["mapreduce.map.memory.mb"]) * MIB >= 2 * GIB


def test_map_spill_sizes_the_sort_buffer_to_the_map_output(suite: Suite) -> None:
    app = {
        "conf": {"mapreduce.task.io.sort.mb": "100", "mapreduce.map.java.opts": "-Xmx1024m"},
        "maps": {
            "n": 1000,
            "tasks": {"map_output_records": 10_000, "spilled_records": 30_000, "map_output_bytes": 200 * MIB},
        },
    }
    result = run(suite, "mapreduce.mapper_spill", app)
    need = math.ceil((200 * MIB + 16 * 10_000) / 0.8 / MIB)
    assert values(result) == {
        "mapreduce.task.io.sort.mb": str(need),
        "mapreduce.map.java.opts": f"-Xmx{1024 + need - 100}m",
    }


def test_many_short_reducers_are_merged_to_reach_the_target_runtime(suite: Suite) -> None:
    app = {"reduces": {"n": 1000, "tasks": {"duration_ms": 30_000, "reduce_shuffle_bytes": 10 * MIB}}}
    result = run(suite, "mapreduce.reducer_time", app)
    assert values(result) == {"mapreduce.job.reduces": str(math.ceil(1000 * 30_000 / (12 * 60_000)))}


def test_short_mappers_get_a_minimum_split_that_makes_them_run_the_target_time(suite: Suite) -> None:
    app = {"maps": {"n": 1000, "tasks": {"duration_ms": 60_000, "hdfs_bytes_read": 16 * MIB}}}
    result = run(suite, "mapreduce.mapper_time", app)
    assert values(result) == {"mapreduce.input.fileinputformat.split.minsize": str((16 * 12 + 1) * MIB)}


# ---- nothing to change ---------------------------------------------------------------------------------------


def test_no_heuristic_gives_changes_when_it_finds_nothing(suite: Suite) -> None:
    spark = spark_app_builder.build_app({"stages": [{"n": 4}]})
    mapreduce = mapreduce_app_builder.build_app({"maps": {"n": 4}, "reduces": {"n": 2}})
    results = [*suite.evaluate(spark), *suite.evaluate(mapreduce)]
    quiet = [r for r in results if r.severity == Severity.NONE]
    assert quiet
    assert all(r.changes == () for r in quiet)
