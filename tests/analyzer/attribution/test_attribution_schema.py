"""Slowdown attribution's typed results (analyzer.attribution.schema): a stored version's params, features and
confidence checked on write, and one app's explanation converted strictly before the answer is built."""

from __future__ import annotations

import datetime as dt
import importlib
from typing import Any

import msgspec
import pytest
from attribution_history import GB, recurring_history, stored_run
from factories import NOW

from analyzer.attribution import schema
from analyzer.attribution.selectors import app_attribution, load_model, runs_frame, serving_version
from analyzer.attribution.services import attribution_train
from analyzer.models import AnalyzedApp, AttributionModelVersion
from analyzer.stored_results import ResultShapeError, typed

pytestmark = pytest.mark.django_db

TEMPLATE = "spark:airflow:dag_3/task"


@pytest.fixture
def trained() -> AttributionModelVersion:
    recurring_history()
    return attribution_train(days=30, now=NOW).version


def test_a_trained_versions_params_features_and_confidence_round_trip_their_structs(
    trained: AttributionModelVersion,
) -> None:
    params = typed(trained.params, schema.ForestParams)
    confidence = typed(trained.confidence, schema.ConfidenceThresholds)

    assert msgspec.to_builtins(params) == trained.params
    assert msgspec.json.decode(msgspec.json.encode(confidence)) == trained.confidence  # the interval: a JSON array
    assert typed(trained.features, list[str]) == trained.features
    assert isinstance(params.max_samples, int)  # a count once trained
    assert confidence.tuned_on == trained.n_holdout
    assert 0 < confidence.low_error <= confidence.high_error


def test_an_older_confidence_without_the_keys_the_library_defaults_decodes_with_those_defaults() -> None:
    older = {"low_error": 0.1, "high_error": 0.3}

    confidence = typed(older, schema.ConfidenceThresholds)

    assert (confidence.interval, confidence.tuned_on, confidence.min_explained_share) == ((5.0, 95.0), 0, 0.5)


def test_the_explanation_struct_round_trips_the_librarys_real_output(trained: AttributionModelVersion) -> None:
    from analysis.attribution import explain

    slow = stored_run(TEMPLATE, runtime_s=3600, input_bytes=12 * GB, end=NOW - dt.timedelta(hours=1))
    model = load_model(trained)
    frame = runs_frame(AnalyzedApp.objects.filter(pk=slow.pk))
    [exp] = explain(model, frame[[c for c in frame.columns if c in model.features or c in ("template", "runtime")]])
    data = exp.to_dict()

    explanation = typed(data, schema.Explanation)

    assert msgspec.to_builtins(explanation) == data
    assert explanation.causes[0].code == "data_volume"
    assert app_attribution(slow).explanation == explanation


def test_an_explanation_with_a_key_the_schema_does_not_name_becomes_the_answers_failure_reason(
    trained: AttributionModelVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = importlib.import_module("analysis.attribution.explain")  # the package exports explain(), the function
    real = library.Explanation.to_dict

    def widened(self: Any) -> dict[str, Any]:
        return {**real(self), "novelty": 1}

    monkeypatch.setattr(library.Explanation, "to_dict", widened)
    slow = stored_run(TEMPLATE, runtime_s=3600, input_bytes=12 * GB, end=NOW - dt.timedelta(hours=1))

    answer = app_attribution(slow)

    assert answer.explanation is None
    assert answer.warning
    assert "$.novelty not in the schema" in answer.reason
    assert serving_version() is not None


def test_forest_params_the_schema_does_not_describe_are_refused() -> None:
    with pytest.raises(ResultShapeError, match=r"\$\.criterion not in the schema"):
        typed(
            {
                "n_estimators": 60,
                "max_depth": 20,
                "min_samples_leaf": 5,
                "max_features": 0.33,
                "max_samples": 100,
                "criterion": "squared_error",
            },
            schema.ForestParams,
        )
