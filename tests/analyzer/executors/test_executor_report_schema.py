"""The executor anomaly report's typed JSON (analyzer.executors.schema): checked on write, decoded on read, and a
row that does not decode said so by the panel and the API instead of a crash."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from django.test import Client
from factories import store_spark_app
from rest_framework.test import APIClient

from analysis.executors import analysis_input, features_frame, rank_executors
from analyzer.executors import schema
from analyzer.executors import selectors as executor_selectors
from analyzer.models import AnalyzedApp, ExecutorAnomalyReport
from analyzer.stored_results import ResultShapeError, typed
from tests.spark_app_builder import build_app
from webui.presenters import executors as executor_presenter

pytestmark = pytest.mark.django_db

EMPTY_RANKING_LISTS = ("executors", "left_out", "features_used", "constant_features")


def report_of(app: AnalyzedApp) -> ExecutorAnomalyReport:
    return ExecutorAnomalyReport.objects.get(app=app)


def test_each_struct_round_trips_the_librarys_real_output_on_a_generated_app() -> None:
    spark = build_app(
        {
            "executors": [{"id": str(i), "host": f"h{i}"} for i in range(1, 6)],
            "stages": [{"n": 40, "tasks": {"executor": [str(1 + i % 5) for i in range(40)]}}],
        }
    )
    kept = msgspec.json.decode(msgspec.json.encode(analysis_input(spark)))  # as stored: JSON
    ranking = msgspec.json.decode(msgspec.json.encode(rank_executors(features_frame(kept["features"])).to_dict()))

    assert msgspec.to_builtins(typed(ranking, schema.ExecutorRanking)) == ranking
    assert msgspec.to_builtins(typed(kept["features"], list[schema.ExecutorFeatureRow])) == kept["features"]
    assert msgspec.to_builtins(typed(kept["series"], schema.TaskSeries)) == kept["series"]
    assert ranking["model"] == "peers"


def test_a_stored_report_decodes_to_exactly_what_was_stored() -> None:
    app = store_spark_app(executors=12, slow_executor="7")
    row = report_of(app)

    report = executor_selectors.stored_report(app)

    assert report is not None
    assert msgspec.to_builtins(report.ranking) == row.ranking
    assert msgspec.to_builtins(report.features) == row.features
    assert msgspec.to_builtins(report.series) == row.series
    assert report.ranking.executors[0].executor_id == "7"
    assert report.ranking.model == row.model


def test_a_local_mode_apps_empty_series_decodes_with_empty_columns() -> None:
    app = store_spark_app(master="local[2]")

    report = executor_selectors.stored_report(app)

    assert report is not None
    assert report.series is not None
    assert (report.series.n_tasks, report.series.executor, report.series.features) == (0, [], {})
    assert report_of(app).series == {"n_tasks": 0, "n_sampled": 0, "max_tasks": 2000, "seed": 7, "executors": []}


def test_an_older_report_without_the_keys_the_library_defaults_decodes_with_those_defaults(client: Client) -> None:
    app = store_spark_app(executors=12, slow_executor="7")
    row = report_of(app)
    ranking = {k: v for k, v in row.ranking.items() if k not in ("warnings", "params")}
    ExecutorAnomalyReport.objects.filter(pk=row.pk).update(ranking=ranking)

    report = executor_selectors.stored_report(app)

    assert report is not None
    assert report.ranking.warnings == []
    assert report.ranking.params == schema.RankingParams()
    assert report.ranking.params.per_task == 1
    html = client.get(f"/apps/{app.pk}/").content.decode()
    assert "Executor 7 on" in html


@pytest.mark.parametrize(
    "corrupt",
    [
        {"ranking": {"model": "peers", "executors": "7"}},
        {"ranking": {"model": "sideways", **{key: [] for key in EMPTY_RANKING_LISTS}}},
        {"features": [{"executor_id": 7}]},
        {"series": {"n_tasks": "many"}},
    ],
)
def test_a_report_that_does_not_decode_is_logged_and_the_panel_and_api_say_to_analyze_again(
    corrupt: dict[str, Any], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    api = APIClient()
    app = store_spark_app(app_id="application_1_0099", executors=12, slow_executor="7")
    ExecutorAnomalyReport.objects.filter(app=app).update(**corrupt)

    response = client.get(f"/apps/{app.pk}/")
    answer = api.get("/api/v1/apps/application_1_0099/executor-anomalies")
    detail = api.get("/api/v1/apps/application_1_0099")

    assert response.status_code == 200
    assert "The stored executor anomaly report cannot be read (" in response.content.decode()
    assert "Analyze the app again to rank its executors." in response.content.decode()
    assert answer.status_code == 200
    body = answer.json()
    assert body["available"] is False
    assert body["reason"].startswith("The stored executor anomaly report cannot be read (")
    assert detail.status_code == 200
    assert "cannot be read" in caplog.text
    if "ranking" in corrupt:
        assert detail.json()["executor_anomaly"] is None


def test_a_ranking_with_a_key_the_schema_does_not_name_fails_the_store_and_becomes_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import analysis.executors as library

    real = library.ExecutorRanking.to_dict

    def widened(self: Any) -> dict[str, Any]:
        return {**real(self), "novelty": 1}

    monkeypatch.setattr(library.ExecutorRanking, "to_dict", widened)
    app = store_spark_app(executors=12)

    assert any("ResultShapeError" in w and "$.novelty not in the schema" in w for w in app.warnings)
    assert not ExecutorAnomalyReport.objects.filter(app=app).exists()


def test_a_ranking_with_a_wrongly_typed_value_is_refused_before_it_is_stored() -> None:
    app = store_spark_app(executors=12)
    ranking = report_of(app).ranking
    ranking["executors"][0]["n_features"] = "14"

    with pytest.raises(ResultShapeError, match=r"\$\.executors\[0\]\.n_features"):
        typed(ranking, schema.ExecutorRanking)


def test_the_panel_of_a_decoded_report_keeps_its_shape() -> None:
    app = store_spark_app(executors=12, slow_executor="7")

    panel = executor_presenter.executor_anomaly_panel(app)

    assert panel is not None
    assert panel["state"] == "ranked"
    assert panel["executors"][0]["executor_id"] == "7"
    assert panel["left_out"] == []
    assert panel["chart"]["data"]["feature"] == panel["feature"]["feature"]
