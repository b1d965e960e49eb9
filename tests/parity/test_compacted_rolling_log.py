"""A rolling log compacted by Spark's own History Server reads like the original.

No compacted log exists in the reference data, so the test makes one the way production clusters do: the real
History Server (from pyspark) compacts a copy of the Spark 4 rolling sample when told to keep one file
(``spark.history.fs.eventLog.rolling.maxFilesToRetain=1``; a score threshold of 0 makes it compact at once).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from live_history_server import history_server_available, live_history_server

from fetchers.eventlog import find_event_logs
from fetchers.spark_eventlog import read_apps

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "eventlog_v2_many_small_tasks"

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not history_server_available(), reason="needs pyspark and Java"),
]

COMPACTION = {
    "spark.history.fs.eventLog.rolling.maxFilesToRetain": "1",
    "spark.history.fs.eventLog.rolling.compaction.score.threshold": "0.0",
}


def compacted_copy(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    log = logs / SAMPLE.name
    shutil.copytree(SAMPLE, log)
    with live_history_server(logs, expected_apps=1, work_dir=tmp_path, conf=COMPACTION):
        deadline = time.monotonic() + 120
        while not any(p.name.endswith(".compact") for p in log.iterdir()):
            assert time.monotonic() < deadline, "the History Server did not compact the log"
            time.sleep(0.5)
    return log


def test_a_log_compacted_by_the_history_server_reads_like_the_original(tmp_path: Path) -> None:
    compacted = compacted_copy(tmp_path)
    (log,), errors = find_event_logs(compacted)
    assert errors == []
    assert len(log.parts) < len(find_event_logs(SAMPLE)[0][0].parts)  # the compact file replaced older parts
    assert log.parts[0].path.name.endswith(".compact")

    (original,) = [o.app for o in read_apps(SAMPLE)]
    (read,) = [o.app for o in read_apps(compacted)]

    assert original is not None
    assert read is not None
    assert read.warnings == []
    assert not read.partial
    assert (read.app_id, read.status, read.end_ms) == (original.app_id, original.status, original.end_ms)
    # Compaction only drops events of finished work it can rebuild without; whatever it kept reads the same.
    assert read.stages
    assert set(read.stages) <= set(original.stages)
    for key, stage in read.stages.items():
        assert len(stage.tasks) <= len(original.stages[key].tasks)
