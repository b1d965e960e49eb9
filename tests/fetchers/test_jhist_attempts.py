"""MapReduce job-history events -> task rows (fetchers.jhist): attempts built from synthetic events, lines spanning
read chunks, and a 100k-task history streamed within memory bounds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jhist_refdata import SLEEP, needs_refdata, read_one_job

from appmodel.mapreduce import MRJobStatus, MRTaskStatus
from fetchers.jhist import build_job, reading

# ---- attempts, built from synthetic events ----------------------------------------------------------------------


def _event(etype: str, cls: str, **body: Any) -> bytes:
    return json.dumps({"type": etype, "event": {f"org.apache.hadoop.mapreduce.jobhistory.{cls}": body}}).encode()


def _attempt(kind: str, task: int, attempt: int, start: int, end: int, outcome: str, **extra: Any) -> list[bytes]:
    letter = "m" if kind == "MAP" else "r"
    tid, aid = f"task_1_0001_{letter}_{task:06d}", f"attempt_1_0001_{letter}_{task:06d}_{attempt}"
    started = _event(
        f"{kind}_ATTEMPT_STARTED",
        "TaskAttemptStarted",
        taskid=tid,
        taskType=kind,
        attemptId=aid,
        startTime=start,
        trackerName=f"host{attempt}",
    )
    common = {"taskid": tid, "taskType": kind, "attemptId": aid, "finishTime": end, "hostname": f"host{attempt}"}
    if outcome == "SUCCEEDED":
        ended = _event(f"{kind}_ATTEMPT_FINISHED", "X", taskStatus="SUCCEEDED", **common, **extra)
    else:
        ended = _event(f"{kind}_ATTEMPT_{outcome}", "X", status=outcome, error=f"{outcome} {aid}", **common, **extra)
    return [started, ended]


def _counters(**values: int) -> dict[str, Any]:
    return {
        "name": "COUNTERS",
        "groups": [
            {
                "name": "org.apache.hadoop.mapred.Task$Counter",
                "counts": [{"name": k, "value": v} for k, v in values.items()],
            }
        ],
    }


def _job_lines(*events: bytes, end: bool = True) -> list[bytes]:
    head = [
        b"Avro-Json",
        b'{"type":"record","name":"Event"}',
        _event(
            "JOB_SUBMITTED",
            "JobSubmitted",
            jobid="job_1_0001",
            jobName="j",
            userName="u",
            submitTime=1,
            jobQueueName="q",
        ),
        _event(
            "JOB_INITED", "JobInited", jobid="job_1_0001", launchTime=2, totalMaps=2, totalReduces=0, uberized=False
        ),
    ]
    tail = [_event("JOB_FAILED", "JobUnsuccessfulCompletion", jobid="job_1_0001", finishTime=99, jobStatus="FAILED")]
    return head + list(events) + (tail if end else [])


def test_a_speculative_attempt_killed_after_the_winner_is_counted_but_not_kept() -> None:
    lines = _job_lines(
        *_attempt("MAP", 0, 0, 10, 50, "SUCCEEDED", counters=_counters(GC_TIME_MILLIS=7)),
        *_attempt("MAP", 0, 1, 20, 55, "KILLED"),
        _event(
            "TASK_FINISHED",
            "TaskFinished",
            taskid="task_1_0001_m_000000",
            taskType="MAP",
            finishTime=50,
            status="SUCCEEDED",
        ),
    )
    app = build_job(lines, source="synthetic")
    tasks = app.maps.tasks
    assert list(tasks.status) == [MRTaskStatus.SUCCEEDED]
    assert (tasks.attempt[0], tasks.start_ms[0], tasks.finish_ms[0], tasks.duration_ms[0]) == (0, 10, 50, 40)
    assert (tasks.attempts[0], tasks.killed_attempts[0], tasks.failed_attempts[0]) == (2, 1, 0)
    assert app.hosts[tasks.host[0]] == "host0"
    assert tasks.gc_time_ms[0] == 7
    assert bool(tasks.has_counters[0])
    assert tasks.failure_reasons == {}


def test_a_task_that_never_succeeded_keeps_its_last_attempt_and_its_reason() -> None:
    lines = _job_lines(
        *_attempt("MAP", 1, 0, 10, 20, "FAILED"),
        *_attempt("MAP", 1, 1, 30, 45, "FAILED", counters=_counters(CPU_MILLISECONDS=3)),
        _event(
            "TASK_FAILED",
            "TaskFailed",
            taskid="task_1_0001_m_000001",
            taskType="MAP",
            finishTime=45,
            status="FAILED",
            error=", later text",
            failedDueToAttempt={"string": "attempt_1_0001_m_000001_1"},
        ),
    )
    app = build_job(lines, source="synthetic")
    tasks = app.maps.tasks
    assert list(tasks.status) == [MRTaskStatus.FAILED]
    assert list(tasks.index) == [1]
    assert (tasks.attempt[0], tasks.start_ms[0], tasks.duration_ms[0], tasks.cpu_ms[0]) == (1, 30, 15, 3)
    assert (tasks.attempts[0], tasks.failed_attempts[0]) == (2, 2)
    assert tasks.failure_reasons == {0: "FAILED attempt_1_0001_m_000001_1"}
    assert app.maps.total_tasks == 2
    assert app.maps.num_without_success == 1
    assert app.status == MRJobStatus.FAILED
    assert app.duration_ms == 98


def test_an_attempt_whose_start_is_missing_is_still_counted() -> None:
    _started, ended = _attempt("REDUCE", 0, 0, 10, 40, "SUCCEEDED", shuffleFinishTime=20, sortFinishTime=25)
    app = build_job(_job_lines(ended, end=False), source="synthetic")
    tasks = app.reduces.tasks
    assert (tasks.attempts[0], tasks.start_ms[0], tasks.duration_ms[0]) == (1, 0, 0)
    assert tasks.shuffle_ms[0] == 0
    assert tasks.sort_ms[0] == 5
    assert tasks.reduce_ms[0] == 15
    assert list(tasks.status) == [MRTaskStatus.SUCCEEDED]  # no task event, but its attempt succeeded
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE


@pytest.mark.parametrize(
    ("etype", "job_status", "diagnostics", "status", "says"),
    [
        ("JOB_KILLED", "KILLED", {"string": "Kill job received from bob"}, MRJobStatus.KILLED, "Kill job received"),
        ("JOB_ERROR", "ERROR", None, MRJobStatus.FAILED, "ERROR state"),
        ("JOB_FAILED", "FAILED", "Task failed task_1_0001_m_000000", MRJobStatus.FAILED, "Task failed"),
    ],
)
def test_unsuccessful_job_ends_give_their_status_and_diagnostics(
    etype: str, job_status: str, diagnostics: Any, status: MRJobStatus, says: str
) -> None:
    end = _event(
        etype,
        "JobUnsuccessfulCompletion",
        jobid="job_1_0001",
        finishTime=50,
        finishedMaps=0,
        finishedReduces=0,
        jobStatus=job_status,
        diagnostics=diagnostics,
    )
    app = build_job(_job_lines(end, end=False), source="synthetic")
    assert app.status == status
    assert says in app.diagnostics
    assert not app.partial


def test_events_a_recovering_am_logs_again_are_not_counted_twice() -> None:
    first = _attempt("MAP", 0, 0, 10, 20, "FAILED")
    high = _attempt("MAP", 0, 1000, 30, 60, "SUCCEEDED")  # a second AM numbers its attempts from 1000
    done = _event("TASK_FINISHED", "TaskFinished", taskid="task_1_0001_m_000000", taskType="MAP", finishTime=60)
    once = build_job(_job_lines(*first, *high, done), source="synthetic")
    twice = build_job(_job_lines(*first, *high, done, *first, *high, done), source="synthetic")
    for app in (once, twice):
        tasks = app.maps.tasks
        assert (tasks.attempts[0], tasks.failed_attempts[0], tasks.attempt[0]) == (2, 1, 1000)
        assert (tasks.start_ms[0], tasks.finish_ms[0]) == (30, 60)
    assert twice.stats.skipped_events == 4


def test_an_attempt_end_logged_before_its_start_is_counted_once() -> None:
    started, ended = _attempt("MAP", 0, 0, 10, 20, "SUCCEEDED")
    app = build_job(_job_lines(ended, started), source="synthetic")
    assert app.maps.tasks.attempts[0] == 1


@needs_refdata
def test_lines_spanning_read_chunks_give_the_same_job(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = read_one_job(SLEEP)
    monkeypatch.setattr(reading, "CHUNK_SIZE", 7)
    chunked = read_one_job(SLEEP)
    assert chunked.stats.events == whole.stats.events
    assert chunked.stats.malformed_lines == 0
    for column in ("duration_ms", "gc_time_ms", "physical_memory_bytes", "sort_finish_ms"):
        assert np.array_equal(getattr(chunked.reduces.tasks, column), getattr(whole.reduces.tasks, column))
        assert np.array_equal(getattr(chunked.maps.tasks, column), getattr(whole.maps.tasks, column))
    assert chunked.counters == whole.counters


@needs_refdata
def test_a_line_too_long_to_be_an_event_is_skipped_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_budgets: Callable[..., None]
) -> None:
    lines = SLEEP.read_bytes().split(b"\n")
    path = tmp_path / SLEEP.name
    path.write_bytes(b"\n".join([*lines[:5], b"x" * 5000, *lines[5:]]))
    monkeypatch.setattr(reading, "CHUNK_SIZE", 256)
    read_budgets(max_line_bytes=4096)  # real event lines of this file are shorter
    app = read_one_job(path)
    assert app.partial
    assert any("longer than" in w for w in app.warnings)
    assert app.stats.events == read_one_job(SLEEP).stats.events


# ---- a 100k-task job ------------------------------------------------------------------------------------------


def _write_big_job(path: Path, maps: int, reduces: int) -> None:
    """A synthetic history of a job with ``maps`` + ``reduces`` tasks, streamed to ``path``."""
    pre = '{"type":"%s","event":{"org.apache.hadoop.mapreduce.jobhistory.%s":'
    counters = (
        '{"name":"COUNTERS","groups":[{"name":"org.apache.hadoop.mapreduce.TaskCounter","displayName":"t","counts":'
        '[{"name":"GC_TIME_MILLIS","displayName":"","value":%d},{"name":"CPU_MILLISECONDS","displayName":"",'
        '"value":%d}]},{"name":"org.apache.hadoop.mapreduce.FileSystemCounter","displayName":"f","counts":'
        '[{"name":"HDFS_BYTES_READ","displayName":"","value":%d}]}]}'
    )
    with path.open("w") as f:
        f.write('Avro-Json\n{"type":"record","name":"Event"}\n')
        f.write(
            pre % ("JOB_SUBMITTED", "JobSubmitted")
            + '{"jobid":"job_1_0001","jobName":"big","userName":"u","submitTime":1,"jobQueueName":"q"}}}\n'
        )
        f.write(
            pre % ("JOB_INITED", "JobInited")
            + f'{{"jobid":"job_1_0001","launchTime":2,"totalMaps":{maps},"totalReduces":{reduces}}}}}}}\n'
        )
        for kind, n, letter in (("MAP", maps, "m"), ("REDUCE", reduces, "r")):
            for i in range(n):
                tid, aid = f"task_1_0001_{letter}_{i:06d}", f"attempt_1_0001_{letter}_{i:06d}_0"
                ids = f'"taskid":"{tid}","taskType":"{kind}"'
                f.write(pre % ("TASK_STARTED", "TaskStarted") + f'{{{ids},"startTime":{10 + i}}}}}}}\n')
                f.write(
                    pre % (f"{kind}_ATTEMPT_STARTED", "TaskAttemptStarted")
                    + f'{{{ids},"attemptId":"{aid}","startTime":{100 + i},"trackerName":"h{i % 50}"}}}}}}\n'
                )
                phase_times = f'"shuffleFinishTime":{500 + i},' if kind == "REDUCE" else f'"mapFinishTime":{900 + i},'
                f.write(
                    pre
                    % (f"{kind}_ATTEMPT_FINISHED", "X")
                    + f'{{{ids},"attemptId":"{aid}","taskStatus":"SUCCEEDED","finishTime":{1100 + 2 * i},'
                    f'"hostname":"h{i % 50}",{phase_times}"counters":' + counters % (i % 97, 1000 + i % 13, i) + "}}}\n"
                )
                f.write(
                    pre % ("TASK_FINISHED", "TaskFinished")
                    + f'{{{ids},"finishTime":{1100 + 2 * i},"status":"SUCCEEDED"}}}}}}\n'
                )
        f.write(
            pre % ("JOB_FINISHED", "JobFinished")
            + f'{{"jobid":"job_1_0001","finishTime":999999,"finishedMaps":{maps},"finishedReduces":{reduces}}}}}}}\n'
        )


_MEASURE = """
import json, resource, sys
from pathlib import Path
import numpy as np
from fetchers.jhist import read_jobs
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
[outcome] = list(read_jobs(Path(sys.argv[1])))
app = outcome.app
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({
    "error": outcome.error, "maps": len(app.maps.tasks), "reduces": len(app.reduces.tasks),
    "succeeded": app.maps.num_succeeded + app.reduces.num_succeeded, "status": app.status.value,
    "gc": int(app.maps.tasks.gc_time_ms.sum() + app.reduces.tasks.gc_time_ms.sum()),
    "hdfs": int(app.maps.tasks.hdfs_bytes_read.sum()), "hosts": len(app.hosts),
    "ordered": bool(np.all(np.diff(app.maps.tasks.index) == 1)), "lines": app.stats.lines,
    "rss_growth_kib": after - before,
}))
"""


def test_a_100k_task_history_is_streamed_into_columns_within_memory_bounds(tmp_path: Path) -> None:
    maps, reduces = 80_000, 20_000
    path = tmp_path / "job_1_0001-big.jhist"
    _write_big_job(path, maps, reduces)
    size = path.stat().st_size
    # A fresh interpreter, so its peak resident size is this parse's alone.
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    got = json.loads(result.stdout)
    assert got["error"] is None
    assert got["status"] == "SUCCEEDED"
    assert (got["maps"], got["reduces"], got["succeeded"]) == (maps, reduces, maps + reduces)
    assert got["gc"] == sum(i % 97 for i in range(maps)) + sum(i % 97 for i in range(reduces))
    assert got["hdfs"] == sum(range(maps))
    assert got["hosts"] == 50
    assert got["ordered"]
    assert got["lines"] == 4 * (maps + reduces) + 4
    # Columns cost a few hundred bytes a task; the file (over 100 MB) is never held whole.
    growth_bytes = got["rss_growth_kib"] * 1024
    assert growth_bytes < 2048 * (maps + reduces), growth_bytes
    assert growth_bytes < size / 2, (growth_bytes, size)
