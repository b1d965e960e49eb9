"""Training and serving slowdown-attribution models: stored versions, the MARE bar, pruning, the command, the task,
and one stored app's explanation."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from attribution_history import GB, recurring_history, stored_run
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from factories import NOW, make_app

from analysis.attribution.features import FORMAT_VERSION
from analyzer.attribution import selectors as attribution_selectors
from analyzer.attribution.selectors import NO_MODEL, app_attribution, serving_version
from analyzer.attribution.services import TooFewRuns, attribution_train, prune
from analyzer.models import AttributionModelVersion, Cluster
from analyzer.tasks import train_attribution_task

pytestmark = pytest.mark.django_db


def version(mare: float, minutes_ago: int, format_version: int = FORMAT_VERSION) -> AttributionModelVersion:
    return AttributionModelVersion.objects.create(
        mare=mare,
        created_at=NOW - dt.timedelta(minutes=minutes_ago),
        blob=b"not a model",
        format_version=format_version,
    )


@pytest.fixture
def history() -> dict[str, list]:
    return recurring_history(cluster=Cluster.objects.create(name="prod"))


def test_training_stores_a_version_with_its_window_counts_error_and_model(history: dict[str, list]) -> None:
    steps: list[str] = []
    trained = attribution_train(days=30, now=NOW, progress=steps.append)
    v = AttributionModelVersion.objects.get()
    assert trained.version == v
    assert steps == ["frame", "baselines", "fit", "holdout", "calibrate", "done", "store"]
    assert (v.n_runs, v.n_templates, v.window_days, v.n_borrowed) == (120, 10, 30, 0)
    assert v.n_train + v.n_holdout == 120
    assert 0 <= v.mare < 0.25
    assert trained.serving
    assert "input_bytes" in v.features
    assert v.params["n_estimators"] > 0
    assert set(v.confidence) >= {"low_error", "high_error", "interval", "high_allowed", "calibration_wrong_high"}
    assert v.window_start is not None
    assert v.window_end is not None
    assert v.window_start <= v.window_end
    assert v.size_bytes == len(bytes(v.blob)) > 0
    assert v.train_seconds > 0
    assert attribution_selectors.load_model(v).features == v.features


def test_the_newest_version_whose_mare_passes_the_bar_serves() -> None:
    good_old = version(0.10, minutes_ago=30)
    version(0.40, minutes_ago=10)  # newer, but too inaccurate to serve
    assert serving_version() == good_old
    good_new = version(0.20, minutes_ago=5)
    assert serving_version() == good_new
    with override_settings(HINDSIGHT_ATTRIBUTION_MAX_MARE=0.15):
        assert serving_version() == good_old
    with override_settings(HINDSIGHT_ATTRIBUTION_MAX_MARE=0.05):
        assert serving_version() is None


def test_a_version_of_an_older_model_format_does_not_serve_and_the_answer_says_to_retrain() -> None:
    version(0.10, minutes_ago=10, format_version=FORMAT_VERSION - 1)  # reads features no longer computed
    assert serving_version() is None
    answer = app_attribution(make_app(template="t", runtime_ms=1000))
    assert "predate the features" in answer.reason


def test_pruning_keeps_the_newest_versions_and_the_serving_one() -> None:
    serving = version(0.1, minutes_ago=60)
    newer = [version(0.9, minutes_ago=m) for m in (50, 40, 30, 20, 10)]
    assert prune(keep=3) == 2
    assert set(AttributionModelVersion.objects.all()) == {serving, *newer[-3:]}


@override_settings(HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS=2)
def test_training_prunes_versions_beyond_the_configured_number(history: dict[str, list]) -> None:
    old = [version(0.9, minutes_ago=m) for m in (30, 20, 10)]
    trained = attribution_train(days=30, now=NOW)
    assert set(AttributionModelVersion.objects.all()) == {old[-1], trained.version}
    assert trained.pruned == 2


def test_too_few_runs_or_templates_to_train_say_what_is_missing() -> None:
    end = NOW - dt.timedelta(days=1)
    for i in range(8):
        stored_run("only", runtime_s=100, input_bytes=GB, end=end - dt.timedelta(hours=i))
    with pytest.raises(TooFewRuns, match=r"8 successful runs .* 20 needed"):
        attribution_train(days=30, now=NOW)
    with pytest.raises(TooFewRuns, match=r"1 template\(s\) with 5 or more runs .* 2 needed"):
        attribution_train(days=30, now=NOW, min_runs=5)
    assert not AttributionModelVersion.objects.exists()


def test_the_command_stores_a_version_and_prints_its_error_and_counts(history: dict[str, list]) -> None:
    out = io.StringIO()
    call_command("train_attribution", "--days", "0", "--quiet", stdout=out)
    text = out.getvalue()
    v = AttributionModelVersion.objects.get()
    assert f"version {v.pk}: held-out MARE {v.mare:.3f}, 120 runs" in text
    assert "10 templates" in text
    assert "It serves" in text


def test_the_command_exits_1_with_a_message_when_there_are_too_few_runs() -> None:
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("train_attribution", "--quiet", stderr=err)
    assert exit_info.value.code == 1
    assert "Too few runs to train: 0 successful runs" in err.getvalue()


def test_the_task_reports_too_little_history_without_failing() -> None:
    result = train_attribution_task()  # in process: .apply() would pin Celery's result backend for later tests
    assert result["version"] is None
    assert "Too few runs" in result["reason"]


def test_beat_trains_a_model_daily_by_default() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["train-attribution"]
    assert entry["task"] == "analyzer.tasks.train_attribution_task"
    assert entry["schedule"] == 86400


def test_an_app_with_more_input_than_usual_is_explained_by_more_data(history: dict[str, list]) -> None:
    attribution_train(days=30, now=NOW)
    template = "spark:airflow:dag_3/task"
    slow = stored_run(template, runtime_s=1200 * 3, input_bytes=4 * GB * 3, end=NOW - dt.timedelta(hours=1))
    result = app_attribution(slow)
    assert result.explanation is not None, result.reason
    assert result.slower
    assert result.explanation.causes[0].code == "data_volume"
    band = {r["id"] for r in result.baseline_runs}
    assert band
    assert band <= {a.pk for a in history[template]}


def test_without_a_model_the_answer_says_how_to_train_one() -> None:
    result = app_attribution(make_app(template="t"))
    assert result.explanation is None
    assert result.reason == NO_MODEL
    assert not result.warning


def test_an_app_without_a_template_is_not_compared(history: dict[str, list]) -> None:
    result = app_attribution(make_app(template=""))
    assert result.explanation is None
    assert "no job template" in result.reason


def test_a_failure_in_the_library_becomes_a_warning_not_an_error(
    history: dict[str, list], monkeypatch: pytest.MonkeyPatch
) -> None:
    attribution_train(days=30, now=NOW)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("the model is broken")

    monkeypatch.setattr("analysis.attribution.explain", broken)
    result = app_attribution(history["spark:airflow:dag_0/task"][0])
    assert result.warning
    assert "the model is broken" in result.reason
