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
