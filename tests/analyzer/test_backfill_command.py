"""``manage.py backfill``: a past range of a cluster analyzed once, window by window, checkpoints untouched."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from factories import copy_log

from analyzer import tasks
from analyzer.ingestion.polling import backfill_windows, poll_once, source_backfill
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Source

pytestmark = pytest.mark.django_db

PLAIN = "local-1795326055348"
ROLLING = "local-1795325985629"
LZ4 = "local-1795326086580"
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
START_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z


def run(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        call_command("backfill", *args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def logs(refdata: Path, tmp_path: Path) -> Path:
    """Three apps that finished on three different days of the range."""
    directory = tmp_path / "spark-events"
    directory.mkdir()
    copy_log(refdata, PLAIN, directory, START_MS + 2 * HOUR_MS)
    copy_log(refdata, f"eventlog_v2_{ROLLING}", directory, START_MS + DAY_MS + HOUR_MS)
    copy_log(refdata, f"{LZ4}.lz4", directory, START_MS + 5 * DAY_MS)  # after the range
    return directory


@pytest.fixture
def source(logs: Path) -> Source:
    return Source.objects.get(cluster=cluster_add("prod", eventlog_dirs=[str(logs)]))


def test_the_range_is_cut_into_consecutive_windows_the_last_one_shorter() -> None:
    assert backfill_windows(0, 25, 10) == [(0, 10), (10, 20), (20, 25)]
    assert backfill_windows(0, 10, 10) == [(0, 10)]


def test_backfill_analyzes_each_app_of_the_range_once_and_leaves_the_checkpoint(source: Source) -> None:
    code, out, err = run("prod", "--since", "2027-01-15T08:00:00Z", "--until", "2027-01-18", "--format", "json")

    assert code == 0
    records = [orjson.loads(line) for line in out.splitlines()]
    assert sorted(r["app_id"] for r in records) == [ROLLING, PLAIN]
    assert {r["cluster"] for r in records} == {"prod"}
    assert sorted(AnalyzedApp.objects.values_list("app_id", flat=True)) == [ROLLING, PLAIN]
    assert "prod/eventlog-dir: 64 windows, 2 apps listed, 2 new, 2 to analyze: analyzed 2" in err
    source.refresh_from_db()
    assert source.checkpoint_ms is None


def test_backfill_twice_or_over_polled_apps_analyzes_nothing_again(source: Source) -> None:
    poll_once(now_ms=START_MS + 3 * HOUR_MS)  # polling took PLAIN already
    assert list(AnalyzedApp.objects.values_list("app_id", flat=True)) == [PLAIN]

    first = run("prod", "--since", str(START_MS), "--until", str(START_MS + 3 * DAY_MS), "--window", "24")
    again = run("prod", "--since", str(START_MS), "--until", str(START_MS + 3 * DAY_MS), "--window", "24")

    assert first[0] == again[0] == 0
    assert ROLLING in first[1]
    assert PLAIN not in first[1]
    assert again[1] == ""
    assert AnalyzedApp.objects.count() == 2


def test_backfill_can_hand_the_apps_to_the_workers(source: Source, monkeypatch: pytest.MonkeyPatch) -> None:
    enqueued: list[int] = []
    monkeypatch.setattr(tasks.analyze_app_task, "delay", enqueued.append)

    code, _out, err = run("prod", "--since", str(START_MS), "--until", str(START_MS + 3 * DAY_MS), "--enqueue")

    assert code == 0
    assert sorted(enqueued) == sorted(AppClaim.objects.values_list("pk", flat=True))
    assert len(enqueued) == 2
    assert set(AppClaim.objects.values_list("state", flat=True)) == {ClaimState.RETRY}
    assert not AnalyzedApp.objects.exists()
    assert "enqueued" in err


def test_each_window_reports_its_progress(source: Source) -> None:
    listed: list[int] = []

    result = source_backfill(source, backfill_windows(START_MS, START_MS + 2 * DAY_MS, DAY_MS), on_window=listed.append)

    assert listed == [1, 1]
    assert (result.windows, result.listed, result.recorded, len(result.claim_ids)) == (2, 2, 2, 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["prod", "--since", "yesterday-ish"], "neither ISO 8601 nor epoch milliseconds"),
        (["prod", "--since", "2027-01-18", "--until", "2027-01-15"], "--until must be after --since"),
        (["prod", "--since", "2027-01-15", "--until", "2027-01-16", "--window", "0"], "--window must be positive"),
        (["nowhere", "--since", "2027-01-15", "--until", "2027-01-16"], "no cluster named nowhere"),
        (["prod", "--since", "2027-01-15", "--until", "2027-01-16", "--backend", "yarn-rm"], "no enabled source"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(source: Source, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message) as raised:
        call_command("backfill", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert raised.value.returncode == 2


def test_a_source_that_cannot_be_listed_exits_1_naming_it(tmp_path: Path) -> None:
    cluster_add("broken", eventlog_dirs=[str(tmp_path / "unmounted")])

    code, _out, err = run("broken", "--since", str(START_MS), "--until", str(START_MS + HOUR_MS))

    assert code == 1
    assert "hindsight: broken/eventlog-dir:" in err


def test_reanalyze_analyzes_the_ranges_analyzed_apps_again_and_only_those(source: Source) -> None:
    first = run("prod", "--since", str(START_MS), "--until", str(START_MS + 3 * DAY_MS), "--window", "24")
    analyzed_at = dict(AnalyzedApp.objects.values_list("app_id", "analyzed_at"))
    again = run(
        "prod", "--since", str(START_MS), "--until", str(START_MS + 3 * DAY_MS), "--window", "24", "--reanalyze"
    )

    assert first[0] == again[0] == 0
    assert sorted(line.split(": ")[1].split()[0] for line in again[1].splitlines()) == sorted([ROLLING, PLAIN])
    assert AnalyzedApp.objects.count() == 2  # the same rows, updated in place
    for app_id, at in AnalyzedApp.objects.values_list("app_id", "analyzed_at"):
        assert at > analyzed_at[app_id]
    assert set(AppClaim.objects.values_list("state", flat=True)) == {ClaimState.DONE}
    assert "2 to analyze: analyzed 2" in again[2]
