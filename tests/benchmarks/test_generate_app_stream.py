"""The throughput benchmark's app stream is made of logs Hindsight reads whole: each app with the tasks asked for."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from appmodel.spark import SparkApp
from fetchers.spark_eventlog import read_apps

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import generate_app_stream  # noqa: E402  (a script beside the benchmarks, not a package)
import generate_large_log  # noqa: E402


@pytest.fixture(scope="module")
def template() -> Path:
    path = generate_large_log.DEFAULT_TEMPLATE
    if not path.exists():
        pytest.skip(f"the Spark 4.1.1 template log is not here: {path}")
    return path


def _read(path: Path) -> SparkApp:
    outcomes = list(read_apps(path, []))
    assert len(outcomes) == 1
    assert outcomes[0].error is None
    assert outcomes[0].app is not None
    return outcomes[0].app


def test_each_generated_log_reads_as_one_complete_app_with_the_task_attempts_it_was_written_with(
    tmp_path: Path, template: Path
) -> None:
    summary = generate_app_stream.generate(tmp_path, 4, 3, template, min_tasks=40, max_tasks=120, zstd_share=0.5)
    manifest = orjson.loads((tmp_path / "stream.json").read_bytes())

    assert summary["apps"] == len(manifest["apps"]) == 4
    for written in manifest["apps"]:
        app = _read(Path(written["path"]))
        assert app.app_id == written["app_id"]
        assert app.end_ms == written["end_ms"]
        assert sum(len(stage.tasks) for stage in app.stages.values()) == written["tasks"]
        assert written["tasks"] >= written["shape"]["tasks"] >= 40
        assert len(set(app.executors) - {"driver"}) == written["shape"]["executors"]
        assert app.stats.malformed_lines == 0


def test_zstd_and_plain_logs_of_the_same_app_read_the_same(tmp_path: Path, template: Path) -> None:
    plain = generate_app_stream.generate(tmp_path / "plain", 1, 5, template, min_tasks=60, max_tasks=60, zstd_share=0)
    packed = generate_app_stream.generate(tmp_path / "zstd", 1, 5, template, min_tasks=60, max_tasks=60, zstd_share=1)

    (plain_log,) = (tmp_path / "plain").glob("application_*")
    (zstd_log,) = (tmp_path / "zstd").glob("application_*")
    assert zstd_log.name.endswith(".zstd")
    assert not plain_log.name.endswith(".zstd")
    assert packed["bytes"] < plain["bytes"] == plain["uncompressed_bytes"] == packed["uncompressed_bytes"]
    a, b = _read(plain_log), _read(zstd_log)
    assert (a.app_id, a.end_ms, sorted(a.stages)) == (b.app_id, b.end_ms, sorted(b.stages))


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path, template: Path) -> None:
    for name in ("a", "b"):
        generate_app_stream.generate(tmp_path / name, 2, 9, template, min_tasks=30, max_tasks=90)
    first = sorted((tmp_path / "a").glob("application_*"))
    assert [p.read_bytes() for p in first] == [(tmp_path / "b" / p.name).read_bytes() for p in first]
