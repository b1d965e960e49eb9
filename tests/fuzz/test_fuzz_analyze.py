"""The fuzz corpus through ``manage.py analyze``: hostile inputs made from real logs never crash, hang or break the
output contract (docs/FUZZ.md; issue 15 item 10).

A fixed seed and case count keep this run bounded (about a minute on 2 cores); ``scripts/fuzz.py`` runs any seed
and count. A failing case prints its seed and index, writes its input under ``var/fuzz-failures/`` and says how to
rerun it alone.

``OPEN`` lists what the corpus finds that other branches fix, as strict xfails: when a fix lands, its cases pass,
strict xfail turns that into a failure, and the entry is deleted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import orjson
import pytest
from fuzz_corpus import NAMES, SUITES, Case, Entry, make_case, spark_seed
from fuzz_oracle import check, describe, run_case, run_command, save_failure

from analyzer.ingestion.sources import cluster_add

SEED: Final = 20261127
# Cheap mutators (~0.1 s a case) get many cases; the ones that cost seconds today (bombs, huge names) a few.
CHEAP_CASES: Final = 330
EXPENSIVE_CASES: Final = 15

# Whole mutators that fail today (the reason says what is wrong; docs/FUZZ.md "Known open failures").
OPEN_MUTATORS: Final[dict[str, str]] = {}
# Single cases of other mutators that fail today: (suite, index) -> reason. Rebuilt after a generator change with
# ``scripts/fuzz.py --seed 20261127 --suite cheap --cases 330`` (its failures, minus the OPEN_MUTATORS ones).
OPEN_CASES: Final[dict[tuple[str, int], str]] = {}


def _params(suite: str, count: int) -> list[object]:
    params = []
    for index in range(count):
        name = SUITES[suite][index % len(SUITES[suite])]
        reason = OPEN_MUTATORS.get(name) or OPEN_CASES.get((suite, index))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(suite, index, id=f"{index:03d}-{name}", marks=marks))
    return params


def _run(case: Case, tmp_path: Path) -> None:
    outcome = run_case(case, tmp_path / "case")
    problems = check(case, outcome)
    if problems:
        saved = save_failure(case, outcome, problems)
        pytest.fail(describe(case, problems, saved), pytrace=False)


@pytest.mark.parametrize(("suite", "index"), _params("cheap", CHEAP_CASES))
def test_a_hostile_input_is_analyzed_or_reported_never_a_crash_a_hang_or_bad_json(
    suite: str, index: int, tmp_path: Path
) -> None:
    _run(make_case(SEED, index, suite), tmp_path)


@pytest.mark.parametrize(("suite", "index"), _params("expensive", EXPENSIVE_CASES))
def test_a_bomb_or_a_huge_value_is_read_within_its_budget_and_said_so(suite: str, index: int, tmp_path: Path) -> None:
    _run(make_case(SEED, index, suite), tmp_path)


@pytest.mark.django_db
@pytest.mark.parametrize("index", range(12))
def test_a_hostile_input_that_is_analyzed_is_also_stored(index: int, tmp_path: Path) -> None:
    """Storing is part of the contract (exit 1 when the database refuses a report): NULs, control characters and
    wrong types must not make PostgreSQL refuse it."""
    case = make_case(SEED, index, "stored")
    outcome = run_case(case, tmp_path / "case", store=True)
    problems = check(case, outcome)
    if problems:
        saved = save_failure(case, outcome, problems)
        pytest.fail(describe(case, problems, saved), pytrace=False)


def test_the_same_seed_and_index_make_the_same_case() -> None:
    """A failure is reproduced from the two numbers it prints."""
    for index in (0, 7, len(NAMES) + 3):
        first, again = make_case(99, index), make_case(99, index)
        assert (first.mutator, first.entries, first.inputs, first.note) == (
            again.mutator,
            again.entries,
            again.inputs,
            again.note,
        )
    assert make_case(99, 1).entries != make_case(100, 1).entries


def test_a_run_as_long_as_the_mutator_list_uses_every_mutator() -> None:
    assert {make_case(1, index).mutator for index in range(len(NAMES))} == set(NAMES)


def test_the_command_as_a_process_exits_2_with_one_line_per_bad_input_and_analyzes_the_good_one(
    tmp_path: Path,
) -> None:
    """The real entry point, once, on the worst mix: a FIFO named like a log, a missing path, garbage, an empty
    file, and a good log; the good one is printed, each other gets its own ``hindsight: PATH: reason`` line."""
    good = b"".join(line + b"\n" for line in spark_seed("samples/failed_job"))
    case = Case(
        SEED,
        -1,
        "process",
        [
            Entry("local-1", kind="fifo"),
            Entry("garbage.zstd", data=b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4),
            Entry("empty", data=b""),
            Entry("good", data=good),
        ],
        ["local-1", "missing", "garbage.zstd", "empty", "good"],
    )
    paths = case.materialize(tmp_path)
    done = subprocess.run(
        [sys.executable, "manage.py", "analyze", *paths, "--format", "json", "--no-store"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        check=False,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 4, lines
    for path, line in zip([p for p in paths if not p.endswith("good")], lines, strict=True):
        assert line.startswith(f"hindsight: {path}: "), line
    [report] = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert report["app_name"] == "hindsight-sample: failed job"


# The analyze-only promises a poll pass does not make: it prints nothing for what it could not read (the source's
# listing says so), so "expected an error line" and "flagged" do not apply.
_NOT_POLL_RULES: Final = ("expected exit 2", "bad input analyzed without", "exit 0 but no report", "exit code")


@pytest.mark.django_db
@pytest.mark.parametrize("index", range(10))
def test_poll_once_over_a_hostile_log_directory_finishes_and_prints_only_valid_reports(
    index: int, tmp_path: Path
) -> None:
    """The watcher's path (F6, F7): ``poll --once`` over an event-log directory holding the case's tree never
    hangs or crashes, lists the source (exit 0) and prints strict, physical JSON for what it analyzed."""
    case = make_case(SEED, index, "polled")
    case.output_format = "json"  # the pass below prints JSON whatever the case drew
    root = tmp_path / "logs"
    case.materialize(root)
    finished = time.time() - 600  # inside the first window of a new source (the hour before now)
    for entry in [root, *root.rglob("*")]:
        if not entry.is_symlink() and (entry.is_file() or entry.is_dir()):
            os.utime(entry, (finished, finished))
    cluster_add("fuzz", eventlog_dirs=[str(root)])
    outcome = run_command("poll", ["--once", "--format", "json"])
    problems = [p for p in check(case, outcome) if not p.startswith(_NOT_POLL_RULES)]
    if outcome.code != 0:
        problems.append(f"exit {outcome.code}: the source could not be listed")
    if case.mutator in ("special_files", "deep_tree") and not outcome.records:
        problems.append("the good log beside the hostile entries was not analyzed")
    if problems:
        saved = save_failure(case, outcome, problems)
        pytest.fail(describe(case, problems, saved), pytrace=False)
