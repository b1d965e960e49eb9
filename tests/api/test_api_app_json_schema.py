"""The app detail serves an app's metrics and warnings, a finding's observed values and an executor's peak metrics as
stored, and the OpenAPI schema describes them with analyzer.schema's types: the metrics as exactly one of
SparkMetrics, MapReduceMetrics and NoMetrics, which a real Spark app's, a real MapReduce job's and an empty value
each are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from rest_framework.test import APIClient

import heuristics
from analysis.pipeline import analyze
from analyzer import schema
from analyzer.models import AnalyzedApp
from analyzer.services import report_store
from fetchers.jhist import read_jobs
from fetchers.spark_eventlog import read_apps

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
JHIST = REPO.parent / "shared" / "refdata" / "hadoop" / "jhist"
METRICS_STRUCTS = (schema.SparkMetrics, schema.MapReduceMetrics, schema.NoMetrics)


def components(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return dict(response.json()["components"]["schemas"])


def stored_spark_app() -> AnalyzedApp:
    [outcome] = list(read_apps(REPO / "samples" / "data_skew"))
    assert outcome.app is not None, outcome.error
    report = analyze(outcome.app, heuristics.load_suite())
    return report_store(report=report, source=report.source)


def stored_mapreduce_job() -> AnalyzedApp:
    if not JHIST.is_dir():
        pytest.skip(f"reference data not found at {JHIST}")
    [outcome] = list(read_jobs(sorted(JHIST.rglob("*.jhist"))[0]))
    assert outcome.app is not None, outcome.error
    report = analyze(outcome.app, heuristics.load_suite())
    return report_store(report=report, source=report.source)


def detail(api: APIClient, app: AnalyzedApp) -> dict[str, Any]:
    response = api.get(f"/api/v1/apps/{app.app_id}")
    assert response.status_code == 200
    return dict(response.json())


def matching_metrics_structs(value: object) -> list[str]:
    """The metrics Structs whose JSON Schema (msgspec's, as the OpenAPI components are made from) ``value`` meets."""
    tops, definitions = msgspec.json.schema_components(METRICS_STRUCTS)
    return [
        struct.__name__
        for struct, top in zip(METRICS_STRUCTS, tops, strict=True)
        if jsonschema.Draft202012Validator({**top, "$defs": definitions}).is_valid(value)
    ]


def test_the_openapi_app_detail_describes_metrics_as_one_of_the_two_metrics_structs_or_none(api: APIClient) -> None:
    shown = components(api)
    metrics = shown["AppDetail"]["properties"]["metrics"]

    assert metrics["oneOf"] == [{"$ref": f"#/components/schemas/{s.__name__}"} for s in METRICS_STRUCTS]
    for struct in METRICS_STRUCTS:
        fields = msgspec.structs.fields(struct)
        assert set(shown[struct.__name__]["properties"]) == {f.encode_name for f in fields}
        assert set(shown[struct.__name__].get("required", [])) == {f.encode_name for f in fields if f.required}
    assert shown["NoMetrics"]["additionalProperties"] is False
    assert shown["SparkMetrics"]["properties"]["core_utilization"]["description"].startswith("Total task time")
    assert "num_speculative_tasks" not in shown["SparkMetrics"]["required"]  # older rows lack it


def test_the_openapi_answer_types_observed_values_peak_metrics_and_warnings_but_not_thresholds(
    api: APIClient,
) -> None:
    shown = components(api)
    observed = shown["Finding"]["properties"]["observed"]
    assert observed["type"] == "object"
    assert {m["type"] for m in observed["additionalProperties"]["anyOf"]} == {"number", "integer", "string", "boolean"}
    assert observed["additionalProperties"]["nullable"] is True
    peaks = shown["Executor"]["properties"]["peak_metrics"]
    assert (peaks["type"], peaks["additionalProperties"]) == ("object", {"type": "integer"})
    warnings = shown["AppDetail"]["properties"]["warnings"]
    assert (warnings["type"], warnings["items"]) == ("array", {"type": "string"})
    assert "type" not in shown["Finding"]["properties"]["thresholds"]  # each heuristic's own shape


def test_a_real_spark_apps_and_mapreduce_jobs_metrics_are_served_as_stored_and_meet_exactly_their_struct(
    api: APIClient,
) -> None:
    for app, struct in ((stored_spark_app(), "SparkMetrics"), (stored_mapreduce_job(), "MapReduceMetrics")):
        answer = detail(api, app)
        assert answer["metrics"] == app.metrics
        assert matching_metrics_structs(answer["metrics"]) == [struct]
        assert answer["warnings"] == app.warnings
    assert matching_metrics_structs({}) == ["NoMetrics"]


def test_an_older_spark_row_without_the_later_metrics_still_meets_spark_metrics_and_is_served_as_stored(
    api: APIClient,
) -> None:
    app = stored_spark_app()
    older = {key: value for key, value in app.metrics.items() if key not in schema.METRICS_ADDED_LATER}
    AnalyzedApp.objects.filter(pk=app.pk).update(metrics=older)

    assert detail(api, app)["metrics"] == older
    assert matching_metrics_structs(older) == ["SparkMetrics"]


def test_a_real_apps_observed_values_and_peak_metrics_are_served_as_stored(api: APIClient) -> None:
    app = stored_spark_app()
    answer = detail(api, app)

    stored = {r.code: r.observed for r in app.heuristic_results.all()}
    assert {f["code"]: f["observed"] for f in answer["heuristics"]} == stored
    peaks = {e.executor_id: e.peak_metrics for e in app.executor_summaries.all()}
    assert {e["executor_id"]: e["peak_metrics"] for e in answer["executors"]} == peaks
    assert any(peaks.values())
