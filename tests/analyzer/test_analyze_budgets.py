"""``analyze`` under the read budgets (fetchers.budgets, issue 15 item 4): one input over its wall-clock budget is
one ``hindsight: PATH: reason`` line and the other inputs are still analyzed."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command

import fetchers.spark_eventlog
from analyzer.fetch_budgets import apply_fetch_budgets
from fetchers.budgets import Deadline, OverTime, ReadBudgets, default_budgets

SPARK_4_LOG = "spark-generated/spark-4.1.1/event-logs/local-1795326055348"


class FirstReadOverTime(Deadline):
    """The first log read runs out of time at its first chunk; every later one has all the time it needs."""

    created = 0

    def __init__(self, budget_s: float) -> None:
        super().__init__(budget_s)
        FirstReadOverTime.created += 1
        self.over = FirstReadOverTime.created == 1

    def check(self) -> None:
        if self.over:
            raise OverTime("reading stopped after the 900 s budget for one input (HINDSIGHT_INPUT_TIME_BUDGET_S)")


def test_an_input_over_its_time_budget_is_one_error_line_and_the_next_input_is_analyzed(
    refdata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "slow" / "local-1795326055348"
    slow.parent.mkdir()
    slow.write_bytes((refdata / SPARK_4_LOG).read_bytes())
    monkeypatch.setattr(FirstReadOverTime, "created", 0)
    monkeypatch.setattr(fetchers.spark_eventlog, "Deadline", FirstReadOverTime)
    stdout, stderr = io.StringIO(), io.StringIO()

    with pytest.raises(SystemExit) as exited:
        call_command("analyze", str(slow), str(refdata / SPARK_4_LOG), "--no-store", "--format", "json",
                     stdout=stdout, stderr=stderr)  # fmt: skip

    assert exited.value.code == 2
    (error,) = stderr.getvalue().splitlines()
    assert error.startswith(f"hindsight: {slow.resolve()}: reading stopped after the 900 s budget")
    assert "HINDSIGHT_INPUT_TIME_BUDGET_S" in error
    (record,) = [line for line in stdout.getvalue().splitlines() if line.strip()]
    assert '"app_id":"local-1795326055348"' in record


def test_the_budget_settings_replace_the_readers_defaults_and_a_bad_one_stops_start_up(
    refdata: Path, read_budgets: Callable[..., None]
) -> None:
    read_budgets()  # the defaults are restored after the test
    apply_fetch_budgets(SimpleNamespace(HINDSIGHT_READ_MAX_NAME_CHARS=3, HINDSIGHT_READ_MAX_LINES=None))

    assert default_budgets() == ReadBudgets(max_name_chars=3)
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("analyze", str(refdata / SPARK_4_LOG), "--no-store", stdout=stdout, stderr=stderr)
    assert "HINDSIGHT_READ_MAX_NAME_CHARS" in stdout.getvalue()
    with pytest.raises(ValueError, match="HINDSIGHT_INPUT_TIME_BUDGET_S: expected a positive number"):
        apply_fetch_budgets(SimpleNamespace(HINDSIGHT_INPUT_TIME_BUDGET_S=0.0))
