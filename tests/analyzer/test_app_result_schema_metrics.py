"""An app's stored metrics, typed (analyzer.schema.SparkMetrics, MapReduceMetrics, NoMetrics): derived from the
analysis's dataclasses, checked on write and stored unchanged; older rows without the later metrics still read and
show them as unknown; the readers that name metric keys themselves name stored ones."""

from __future__ import annotations

import dataclasses
import html
import math
from pathlib import Path

import msgspec
import pytest
from django.test import Client

import heuristics
from analysis import metrics as spark_metrics
from analysis import metrics_mapreduce as mapreduce_metrics
from analysis.pipeline import AnalysisReport, analyze
from analyzer import schema
from analyzer.attribution import selectors as attribution_selectors
from analyzer.models import AnalyzedApp
from analyzer.selectors.report import metric_values
from analyzer.services import report_store
from analyzer.stored_results import ResultShapeError, validated
from appmodel.formatting import MISSING
from appmodel.jsonsafe import jsonb_safe
from fetchers.jhist import read_jobs
from fetchers.spark_eventlog import read_apps
from webui.presenters import metrics as metrics_presenter

REPO = Path(__file__).resolve().parents[2]
SPARK_SAMPLES = [
    REPO / "samples" / "data_skew",
    REPO / "samples" / "cluster" / "fleet_rollup_run01_rollup_fleet_try1.zstd",
]
JHIST = Path(__file__).resolve().parents[3] / "shared" / "refdata" / "hadoop" / "jhist"
needs_jhist = pytest.mark.skipif(not JHIST.is_dir(), reason=f"reference data not found at {JHIST}")


def spark_report(path: Path = SPARK_SAMPLES[0]) -> AnalysisReport:
    [outcome] = list(read_apps(path))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def mapreduce_report() -> AnalysisReport:
    [outcome] = list(read_jobs(sorted(JHIST.rglob("*.jhist"))[0]))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def field_names(struct: type[msgspec.Struct]) -> list[str]:
    return [field.encode_name for field in msgspec.structs.fields(struct)]


def stored_fields(dataclass: type) -> list[str]:
    return [field.name for field in dataclasses.fields(dataclass) if field.name != "notes"]


def assert_stored_unchanged_and_typed(report: AnalysisReport, struct: type[msgspec.Struct]) -> AnalyzedApp:
    assert report.metrics is not None
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()
    assert app.metrics == jsonb_safe(report.metrics.to_dict())  # exactly what the analysis computed
    assert set(app.metrics) == set(field_names(struct))  # jsonb keeps no key order
    decoded = msgspec.convert(app.metrics, struct)
    assert msgspec.json.decode(msgspec.json.encode(decoded)) == app.metrics
    return app


# ---- the real thing round-trips -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", SPARK_SAMPLES, ids=lambda p: p.name)
def test_a_sample_spark_apps_metrics_are_stored_as_computed_and_decode_as_spark_metrics(path: Path) -> None:
    report = spark_report(path)
    app = assert_stored_unchanged_and_typed(report, schema.SparkMetrics)
    assert app.metrics["num_tasks"] > 0
    assert app.metrics["end_basis"] == "application_end"


@pytest.mark.django_db
@needs_jhist
def test_a_reference_mapreduce_jobs_metrics_are_stored_as_computed_and_decode_as_mapreduce_metrics() -> None:
    app = assert_stored_unchanged_and_typed(mapreduce_report(), schema.MapReduceMetrics)
    assert app.metrics["num_maps"] > 0


@pytest.mark.django_db
def test_an_app_whose_metrics_failed_stores_no_metrics_as_before() -> None:
    report = dataclasses.replace(spark_report(), metrics=None)
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()
    assert app.metrics == {}
    assert msgspec.convert(app.metrics, schema.NoMetrics) == schema.NoMetrics()


@pytest.mark.django_db
def test_an_infinite_metric_is_stored_as_the_string_inf_which_its_struct_allows() -> None:
    report = spark_report()
    assert isinstance(report.metrics, spark_metrics.AppMetrics)
    unbounded = dataclasses.replace(report.metrics, used_gb_hours=math.inf, core_utilization=math.nan)
    app = report_store(report=dataclasses.replace(report, metrics=unbounded), source=report.source)
    app.refresh_from_db()
    assert (app.metrics["used_gb_hours"], app.metrics["core_utilization"]) == ("inf", None)
    assert msgspec.convert(app.metrics, schema.SparkMetrics).used_gb_hours == "inf"  # type: ignore[attr-defined]


# ---- the Structs follow the dataclasses ---------------------------------------------------------------------


def test_the_metrics_structs_have_the_dataclasses_stored_fields_in_order_each_described_by_its_definition() -> None:
    for dataclass, struct, app_type in (
        (spark_metrics.AppMetrics, schema.SparkMetrics, "SPARK"),
        (mapreduce_metrics.MapReduceMetrics, schema.MapReduceMetrics, "MAPREDUCE"),
    ):
        assert field_names(struct) == stored_fields(dataclass)
        definitions = {name: doc for name, _unit, doc in spark_metrics.metric_definitions(app_type)}
        for field in msgspec.structs.fields(struct):
            described = msgspec.inspect.type_info(field.type)
            assert isinstance(described, msgspec.inspect.Metadata)
            assert described.extra_json_schema is not None
            assert described.extra_json_schema["description"].startswith(definitions[field.name])
    absent_from_older_rows = {f.name for f in msgspec.structs.fields(schema.SparkMetrics) if not f.required}
    assert absent_from_older_rows == schema.METRICS_ADDED_LATER
    assert all(f.required for f in msgspec.structs.fields(schema.MapReduceMetrics))


def test_a_metric_added_to_a_dataclass_is_in_its_derived_struct_and_one_of_a_type_with_no_stored_form_fails() -> None:
    metrics = spark_report().metrics
    assert isinstance(metrics, spark_metrics.AppMetrics)
    widened = dataclasses.make_dataclass(
        "Widened",
        [("new_metric_ms", int | None, dataclasses.field(default=None, metadata={"doc": "New.", "unit": "ms"}))],
        bases=(spark_metrics.AppMetrics,),
        frozen=True,
    )
    struct = schema.stored_metrics_struct(widened, "Widened", "Widened.", choices={})
    assert field_names(struct) == [*stored_fields(spark_metrics.AppMetrics), "new_metric_ms"]
    stored = jsonb_safe(
        widened(
            **{name: getattr(metrics, name) for name in stored_fields(widened)[:-1]}, notes=(), new_metric_ms=5
        ).to_dict()
    )
    assert validated(stored, struct) == stored
    with pytest.raises(ResultShapeError, match=r"SparkMetrics: \$\.new_metric_ms not in the schema"):
        validated(stored, schema.SparkMetrics)  # what storing it would say had the Struct not followed

    listed = dataclasses.make_dataclass("Listed", [("per_stage_ms", list[int])], frozen=True)
    with pytest.raises(TypeError, match=r"Listed\.per_stage_ms: no stored form"):
        schema.stored_metrics_struct(listed, "Listed", "Listed.", choices={})


def test_the_text_metrics_list_the_values_the_analysis_writes() -> None:
    def choices(struct: type[msgspec.Struct], name: str) -> set[str]:
        [field] = [f for f in msgspec.structs.fields(struct) if f.name == name]
        return set(msgspec.json.schema(field.type)["anyOf"][0]["enum"])

    assert choices(schema.SparkMetrics, "end_basis") == {b.value for b in spark_metrics.EndBasis}
    assert choices(schema.SparkMetrics, "waste_basis") == {b.value for b in spark_metrics.WasteBasis}
    assert choices(schema.MapReduceMetrics, "end_basis") == {mapreduce_metrics.JOB_END, mapreduce_metrics.LAST_EVENT}
    assert choices(schema.MapReduceMetrics, "waste_basis") == {mapreduce_metrics.PEAK_TASK_MEMORY}


# ---- out of shape on write ----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"end_basis": "guessed"}, r"SparkMetrics: Invalid enum value 'guessed' - at `\$.end_basis`"),
        ({"num_jobs": True}, r"Expected `int`, got `bool` - at `\$.num_jobs`"),
        ({"runtime_ms": 1.5}, r"Expected `int \| null`, got `float` - at `\$.runtime_ms`"),
    ],
)
def test_metrics_out_of_their_shape_are_refused_before_anything_is_stored(
    change: dict[str, object], problem: str
) -> None:
    report = spark_report()
    assert report.metrics is not None
    broken = dataclasses.replace(report, metrics=dataclasses.replace(report.metrics, **change))  # type: ignore[arg-type]

    with pytest.raises(ResultShapeError, match=problem):
        report_store(report=broken, source=report.source)
    assert not AnalyzedApp.objects.exists()


# ---- older rows ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_row_stored_before_the_later_spark_metrics_still_decodes_and_shows_them_as_unknown(client: Client) -> None:
    report = spark_report()
    app = report_store(report=report, source=report.source)
    older = {key: value for key, value in app.metrics.items() if key not in schema.METRICS_ADDED_LATER}
    AnalyzedApp.objects.filter(pk=app.pk).update(metrics=older)
    app.refresh_from_db()

    decoded = msgspec.convert(app.metrics, schema.SparkMetrics)
    assert decoded.num_speculative_tasks is msgspec.UNSET  # type: ignore[attr-defined]
    shown = {m.key: m.value for m in metrics_presenter.app_metrics(app.app_type, metric_values(app))}
    assert {key: shown[key] for key in schema.METRICS_ADDED_LATER} == dict.fromkeys(schema.METRICS_ADDED_LATER)
    assert {key: shown[key] for key in older} == older

    page = html.unescape(client.get(f"/apps/{app.pk}/").content.decode())
    for key in schema.METRICS_ADDED_LATER:
        assert f'{metrics_presenter.metric_label(key)}</a></th><td class="num">{MISSING}</td>' in page


# ---- readers naming metric keys -----------------------------------------------------------------------------


def test_the_attribution_frame_reads_only_stored_metric_keys() -> None:
    assert set(attribution_selectors._METRIC_KEYS) <= schema.METRIC_KEYS
    assert schema.metric_keys("num_tasks", "num_maps") == ("num_tasks", "num_maps")
    with pytest.raises(KeyError, match="num_task, shuffle_wait_ms"):
        schema.metric_keys("num_tasks", "num_task", "shuffle_wait_ms")


def test_the_report_defines_every_stored_metric_and_leads_with_stored_ones() -> None:
    for app_type, struct in (("SPARK", schema.SparkMetrics), ("MAPREDUCE", schema.MapReduceMetrics)):
        defined = [name for name, _unit, _doc in spark_metrics.metric_definitions(app_type)]
        assert defined == field_names(struct)
    assert set(metrics_presenter.KEY_METRICS) <= set(field_names(schema.SparkMetrics))
