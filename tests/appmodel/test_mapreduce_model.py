"""The typed MapReduce job model (appmodel.mapreduce): columns, derived times, phases and counters."""

from __future__ import annotations

import numpy as np
import pytest

from appmodel import (
    COUNTER_COLUMNS,
    MR_TASK_COLUMNS,
    MapReduceApp,
    MRJobStatus,
    MRPhase,
    MRPhaseKind,
    MRTaskColumns,
    MRTaskStatus,
    canonical_group,
    counter_values,
)


def test_absent_columns_are_zero_and_unknown_attempts_and_hosts_are_minus_one() -> None:
    tasks = MRTaskColumns.from_columns({"index": [0, 1, 2], "duration_ms": [5, 6, 7]})
    assert len(tasks) == 3
    assert list(tasks.attempt) == [-1, -1, -1]
    assert list(tasks.host) == [-1, -1, -1]
    assert list(tasks.gc_time_ms) == [0, 0, 0]
    assert tasks.duration_ms.dtype == np.int64
    assert tasks.status.dtype == np.int8
    assert len(MRTaskColumns.empty()) == 0


def test_columns_of_unequal_length_or_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        MRTaskColumns.from_columns({"index": [0, 1], "duration_ms": [1]})
    with pytest.raises(ValueError, match="unknown task columns"):
        MRTaskColumns.from_columns({"index": [0], "bogus": [1]})


def test_every_column_is_a_field_and_every_counter_feeds_a_column() -> None:
    names = [name for name, _ in MR_TASK_COLUMNS]
    assert len(names) == len(set(names))
    assert set(names) | {"failure_reasons"} == set(MRTaskColumns.__dataclass_fields__)
    assert set(COUNTER_COLUMNS.values()) <= set(names)


def test_shuffle_sort_and_reduce_times_come_from_the_phase_ends_and_unknown_ends_give_zero() -> None:
    tasks = MRTaskColumns.from_columns(
        {
            "start_ms": [1000, 1000, 0],
            "shuffle_finish_ms": [1500, 0, 1500],
            "sort_finish_ms": [1700, 1700, 1700],
            "finish_ms": [2000, 2000, 0],
        }
    )
    assert list(tasks.shuffle_ms) == [500, 0, 0]
    assert list(tasks.sort_ms) == [200, 0, 200]
    assert list(tasks.reduce_ms) == [300, 300, 0]


def test_task_masks_and_phase_counts_follow_the_task_status() -> None:
    status = [MRTaskStatus.SUCCEEDED, MRTaskStatus.FAILED, MRTaskStatus.KILLED, MRTaskStatus.INCOMPLETE]
    phase = MRPhase(MRPhaseKind.MAP, MRTaskColumns.from_columns({"status": status}), total_tasks=4)
    assert list(phase.tasks.succeeded) == [True, False, False, False]
    assert (phase.num_succeeded, phase.num_failed, phase.num_killed, phase.num_without_success) == (1, 1, 1, 3)


def test_mapper_input_is_hdfs_plus_s3_bytes_read() -> None:
    tasks = MRTaskColumns.from_columns(
        {"hdfs_bytes_read": [10, 0], "s3_bytes_read": [5, 7], "file_bytes_read": [99, 99]}
    )
    assert list(tasks.filesystem_bytes_read) == [15, 7]


def test_a_sampled_phase_marks_the_job_sampled_and_keeps_the_true_task_count() -> None:
    sampled = MRPhase(
        MRPhaseKind.MAP, MRTaskColumns.from_columns({"index": range(200)}), total_tasks=5000, sampled=True
    )
    app = MapReduceApp(job_id="job_1_0001", maps=sampled, task_sample_limit=200)
    assert app.sampled
    assert app.total_tasks == 5000
    assert len(app.maps.tasks) == 200
    assert not MapReduceApp(job_id="job_1_0002").sampled


def test_counters_are_found_under_old_and_new_group_names() -> None:
    app = MapReduceApp(
        job_id="job_1_0001",
        counters={"org.apache.hadoop.mapreduce.FileSystemCounter": {"HDFS_BYTES_READ": 42}},
    )
    assert app.counter("FileSystemCounters", "HDFS_BYTES_READ") == 42
    assert app.counter("org.apache.hadoop.mapreduce.FileSystemCounter", "HDFS_BYTES_READ") == 42
    assert app.counter("org.apache.hadoop.mapreduce.TaskCounter", "GC_TIME_MILLIS", -1) == -1
    assert canonical_group("org.apache.hadoop.mapred.Task$Counter") == "org.apache.hadoop.mapreduce.TaskCounter"
    assert canonical_group("my.custom.Group") == "my.custom.Group"


def test_a_job_without_an_end_has_no_duration_and_defaults_to_incomplete() -> None:
    app = MapReduceApp(job_id="job_1_0001", submit_ms=1000)
    assert app.status == MRJobStatus.INCOMPLETE
    assert app.duration_ms is None
    app.finish_ms = 4000
    assert app.duration_ms == 3000
    assert [phase.kind for phase in app.phases] == [MRPhaseKind.MAP, MRPhaseKind.REDUCE]


def test_counter_values_fill_columns_from_any_group_name_and_add_the_s3_schemes() -> None:
    values = counter_values(
        [
            ("FileSystemCounters", "HDFS_BYTES_READ", 10),
            ("org.apache.hadoop.mapreduce.FileSystemCounter", "S3A_BYTES_READ", 5),
            ("org.apache.hadoop.mapreduce.FileSystemCounter", "S3N_BYTES_READ", 2),
            ("org.apache.hadoop.mapreduce.TaskCounter", "GC_TIME_MILLIS", 7),
            ("Shuffle Errors", "IO_ERROR", 1),
        ]
    )
    assert values == {"hdfs_bytes_read": 10, "s3_bytes_read": 7, "gc_time_ms": 7}
    tasks = MRTaskColumns.from_columns({name: [value] for name, value in values.items()})
    assert tasks.filesystem_bytes_read[0] == 17
