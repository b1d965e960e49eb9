"""What the fuzz suite found outside the areas other branches fix, each pinned by a test of its own."""

from __future__ import annotations

import io
import random
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from fuzz_corpus import m_huge_counters


def _saturated_log() -> bytes:
    """A real log with every TaskEnd counter at 2^63 - 1 (the huge_counters mutator)."""
    entries, _, _, _ = m_huge_counters(random.Random(1))
    return entries[0].data


def test_a_log_whose_counters_sum_past_64_bits_still_prints_strict_json(tmp_path: Path) -> None:
    """Every TaskEnd counter at 2^63 - 1: heuristics' observed sums pass 64 bits, which orjson refused, and the
    whole app was lost as 'cannot read Spark event logs: TypeError: Integer exceeds 64-bit range'."""
    log = tmp_path / "app-counters"
    log.write_bytes(_saturated_log())
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("analyze", str(log), "--format", "json", "--no-store", stdout=stdout, stderr=stderr)
    assert stderr.getvalue() == ""
    [report] = [orjson.loads(line) for line in stdout.getvalue().splitlines()]
    assert report["app_name"]
    assert report["metrics"]["num_tasks"] > 0


@pytest.mark.django_db
def test_a_log_whose_counters_sum_past_64_bits_is_stored(tmp_path: Path) -> None:
    log = tmp_path / "app-counters"
    log.write_bytes(_saturated_log())
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("analyze", str(log), "--format", "json", stdout=stdout, stderr=stderr)
    assert stderr.getvalue() == ""
    [report] = [orjson.loads(line) for line in stdout.getvalue().splitlines()]
    assert report["stored_id"] is not None


SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "clean_app"


def _analyzed(log: Path) -> dict[str, object]:
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("analyze", str(log), "--format", "json", "--no-store", stdout=stdout, stderr=stderr)
    assert stderr.getvalue() == ""
    [report] = [orjson.loads(line) for line in stdout.getvalue().splitlines()]
    assert isinstance(report, dict)
    return report


def test_a_byte_that_is_not_utf8_in_one_task_end_costs_that_line_not_the_log(tmp_path: Path) -> None:
    """fuzz-1: msgspec raised UnicodeDecodeError past the typed decoder's except and the whole log was lost."""
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if line.startswith(b'{"Event":"SparkListenerTaskEnd"'))
    lines[target] = lines[target].replace(b'"Host":"', b'"Host":"\xff', 1)
    log = tmp_path / "app-bad-utf8"
    log.write_bytes(b"".join(lines))

    report = _analyzed(log)

    assert report["app_name"]
    assert any("malformed" in str(warning) for warning in report["warnings"])  # type: ignore[attr-defined]


def test_negative_task_metrics_read_as_zero_with_a_warning_and_never_make_a_stage_sum_negative(tmp_path: Path) -> None:
    """F17 residue: '-1' sizes on every task reached the stage rows as input_bytes = -2, with no warning."""
    text = SAMPLE.read_text()
    log = tmp_path / "app-negative"
    log.write_text(
        text.replace('"Executor Run Time":', '"Executor Run Time":-7,"_was":').replace(
            '"Bytes Read":', '"Bytes Read":-1,"_was":'
        )
    )

    report = _analyzed(log)

    assert any("negative metric values" in str(warning) for warning in report["warnings"])  # type: ignore[attr-defined]
    assert report["partial"] is True
    metrics = report["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["total_task_time_ms"] >= 0
