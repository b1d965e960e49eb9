"""``poll`` without ``--once``: a loop without Celery that stops after --passes or on SIGTERM, exiting 0."""

from __future__ import annotations

import datetime as dt
import io
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from factories import copy_log

from analyzer.ingestion.polling import seconds_until_due
from analyzer.ingestion.sources import cluster_add
from analyzer.management.commands import poll as poll_command
from analyzer.models import AnalyzedApp, Source

pytestmark = pytest.mark.django_db

PLAIN = "local-1795326055348"


@pytest.fixture
def source(refdata: Path, tmp_path: Path) -> Source:
    """A source over a directory holding one app finished 30 minutes ago, its window covering it."""
    directory = tmp_path / "spark-events"
    directory.mkdir()
    copy_log(refdata, PLAIN, directory, int((time.time() - 30 * 60) * 1000))
    the_source = Source.objects.get(cluster=cluster_add("prod", eventlog_dirs=[str(directory)]))
    Source.objects.filter(pk=the_source.pk).update(checkpoint_ms=0)
    return the_source


def run(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        call_command("poll", *args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, stdout.getvalue(), stderr.getvalue()


def test_two_passes_analyze_the_app_once_and_exit_0(source: Source) -> None:
    code, out, err = run("--passes", "2", "--interval", "0")

    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 1
    assert PLAIN in out
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


def test_sigterm_lets_the_current_pass_finish_then_exits_0(source: Source, monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[int] = []
    real_poll_sources = poll_command.poll_sources

    def poll_sources_then_sigterm(**kwargs: Any) -> Any:
        passes.append(1)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-pass, before any app is analyzed
        yield from real_poll_sources(**kwargs)

    monkeypatch.setattr(poll_command, "poll_sources", poll_sources_then_sigterm)

    code, out, _ = run("--interval", "3600")  # without the signal it would sleep an hour, then loop forever

    assert code == 0
    assert len(passes) == 1
    assert PLAIN in out
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


def test_a_source_that_cannot_be_listed_is_reported_and_the_loop_goes_on(source: Source, tmp_path: Path) -> None:
    cluster_add("broken", eventlog_dirs=[str(tmp_path / "unmounted")])

    code, out, err = run("--passes", "2", "--interval", "0")

    assert code == 0
    assert len([line for line in err.splitlines() if line.startswith("hindsight: broken/eventlog-dir: ")]) == 2
    assert PLAIN in out


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(CommandError, match="--interval"):
        call_command("poll", "--interval", "-1")


def test_the_loop_sleeps_until_the_next_source_is_due(source: Source) -> None:
    now = timezone.now()
    Source.objects.filter(pk=source.pk).update(last_poll_at=now - dt.timedelta(seconds=4), poll_interval_s=10)

    assert seconds_until_due(now, idle_s=99) == pytest.approx(6)
    Source.objects.update(enabled=False)
    assert seconds_until_due(now, idle_s=99) == 99
