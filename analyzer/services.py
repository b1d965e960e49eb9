"""Writes of analysis results: the only code that stores or deletes ``analyzer.models`` rows.

Everything stored comes from untrusted clusters, so every value is fitted to its column on the way in: text
loses NUL characters (PostgreSQL refuses them) and is cut to the column's length with "...", integers are
clamped to the column's range, JSON gets plain builtins with NaN as null, and epoch milliseconds become
aware UTC datetimes (None when out of range). The JSON the pure analysis produces in a fixed shape (an app's
metrics, parse statistics, warnings, failure, headline and what-if, a finding's observed values and changes, an
executor's peak metrics, a stage's histogram and task times per host) is first checked against ``analyzer.schema``
(``analyzer.stored_results.validated``) and stored unchanged.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, Final

import orjson
from django.db import connection, models, transaction

from analysis.impact import Impact
from analysis.metrics import AppMetrics
from analysis.metrics_mapreduce import MapReduceMetrics
from analysis.pipeline import SEVERITY_NAMES, AnalysisReport
from analyzer import schema
from analyzer.executors.services import executor_anomaly_store
from analyzer.models import (
    AnalyzedApp,
    AppHostTasks,
    AppType,
    ExecutorSummary,
    HeuristicDetail,
    HeuristicResult,
    StageSummary,
)
from analyzer.stored_results import validated
from appmodel.jsonsafe import jsonb_safe, strip_nul

ELLIPSIS: Final = "..."
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_BATCH_SIZE: Final = 5000  # rows per INSERT: large enough for speed, small enough for bounded query text

Converter = Callable[[Any], Any]


def ms_to_datetime(ms: int | None) -> dt.datetime | None:
    """Epoch milliseconds as an aware UTC datetime; None for None or a value no datetime can hold."""
    if ms is None:
        return None
    try:
        return _EPOCH + dt.timedelta(milliseconds=int(ms))
    except (OverflowError, ValueError, TypeError):
        return None


def _converter(field: models.Field[Any, Any], from_ms: bool = False) -> Converter:
    """A function fitting any value to ``field``; built once per field, applied to every row."""
    nullable = field.null
    if from_ms:
        return ms_to_datetime
    if isinstance(field, models.JSONField):
        return jsonb_safe
    if isinstance(field, models.CharField | models.TextField):
        limit = field.max_length

        def text(value: Any) -> str:
            value = strip_nul("" if value is None else str(value))
            if limit is not None and len(value) > limit:
                return value[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS
            return value

        return text
    if isinstance(field, models.BooleanField):
        return bool
    if isinstance(field, models.IntegerField):  # BigInteger, PositiveSmallInteger, ... are subclasses
        low, high = connection.ops.integer_field_range(field.get_internal_type())

        def integer(value: Any) -> int | None:
            if value is None:
                return None if nullable else 0
            number = int(value)
            if low is not None and number < low:
                return low
            return high if high is not None and number > high else number

        return integer
    if isinstance(field, models.FloatField):

        def real(value: Any) -> float | None:
            return None if value is None and nullable else float(value or 0.0)

        return real
    return lambda value: value


@dataclasses.dataclass(frozen=True, slots=True)
class _Column:
    """How one attribute of a summary row reaches one column."""

    source: str  # row attribute
    field: models.Field[Any, Any]
    convert: Converter


@cache
def _row_plan(model: type[models.Model], row_type: type) -> tuple[_Column, ...]:
    """The columns a row type fills; a row's ``*_ms`` field fills the ``*_time`` DateTimeField of the same stem."""
    model_fields = {f.name: f for f in model._meta.concrete_fields if not f.primary_key and not f.is_relation}
    plan = []
    for row_field in dataclasses.fields(row_type):
        name = row_field.name
        if name in model_fields:
            plan.append(_Column(name, model_fields[name], _converter(model_fields[name])))
        elif name.endswith("_ms") and isinstance(model_fields.get(f"{name[:-3]}_time"), models.DateTimeField):
            target = model_fields[f"{name[:-3]}_time"]
            plan.append(_Column(name, target, _converter(target, from_ms=True)))
    return tuple(plan)


def _column_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """The model's field that owns a column; a reverse relation has none."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise TypeError(f"{model.__name__}.{name} is a reverse relation, not a column")
    return field


def _column_name(field: models.Field[Any, Any]) -> str:
    if field.column is None:  # a many-to-many field has no column of its own
        raise TypeError(f"{field.name} has no column")
    return field.column


@cache
def _field_converter(model: type[models.Model], name: str) -> Converter:
    return _converter(_column_field(model, name))


def _fit(model: type[models.Model], **values: Any) -> dict[str, Any]:
    return {name: _field_converter(model, name)(value) for name, value in values.items()}


_COPY_ESCAPES: Final = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_NULL: Final = "\\N"


def _copy_json(value: Any) -> str:
    try:
        text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    except TypeError:
        text = None
    if text is None or "\\u0000" in text:  # odd types or NUL characters: take the slow, careful path
        text = orjson.dumps(jsonb_safe(value)).decode()
    return text.translate(_COPY_ESCAPES)


def _copy_value(column: _Column, value: Any) -> str:
    """One value in PostgreSQL COPY text format."""
    if isinstance(column.field, models.JSONField):
        return _copy_json(value)
    value = column.convert(value)
    if value is None:
        return _COPY_NULL
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, str):
        return value.translate(_COPY_ESCAPES)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)  # ints; floats print as nan/inf, which PostgreSQL reads


def _insert_rows(model: type[models.Model], app: AnalyzedApp, rows: Sequence[Any]) -> None:
    """Insert summary rows: COPY on PostgreSQL (10k stages in a fraction of a second), else bulk_create."""
    if not rows:
        return
    row_type: type = type(rows[0])  # a plain type: cache's Hashable check rejects type[Any]
    plan = _row_plan(model, row_type)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and hasattr(cursor, "copy_expert"):  # psycopg2
            quote = connection.ops.quote_name
            columns = ", ".join(quote(_column_name(f)) for f in [_column_field(model, "app"), *(c.field for c in plan)])
            buffer = io.StringIO()
            prefix = f"{app.pk}\t"
            for row in rows:
                buffer.write(prefix + "\t".join(_copy_value(c, getattr(row, c.source)) for c in plan) + "\n")
            buffer.seek(0)
            cursor.copy_expert(f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN", buffer)
            return
    model._default_manager.bulk_create(
        (model(app=app, **{c.field.name: c.convert(getattr(row, c.source)) for c in plan}) for row in rows),
        batch_size=_BATCH_SIZE,
    )


def _app_values(report: AnalysisReport) -> dict[str, Any]:
    metrics = report.metrics
    return _fit(
        AnalyzedApp,
        app_type=AppType.MAPREDUCE if report.app_type == AppType.MAPREDUCE else AppType.SPARK,
        name=report.app_name,
        user=report.user,
        queue=report.queue,
        job_type=report.job.job_type,
        scheduler=report.job.scheduler or "",
        flow_def_id=report.job.flow_def_id,
        flow_def_url=report.job.flow_def_url,
        flow_exec_id=report.job.flow_exec_id,
        flow_exec_url=report.job.flow_exec_url,
        job_def_id=report.job.job_def_id,
        job_def_url=report.job.job_def_url,
        job_exec_id=report.job.job_exec_id,
        job_exec_url=report.job.job_exec_url,
        job_name=report.job.job_name,
        template=report.job.template,
        stage_signature=report.stage_signature,
        spark_version=report.spark_version or "",
        start_time=ms_to_datetime(report.start_ms),
        end_time=ms_to_datetime(report.end_ms),
        status=report.status,
        partial=report.partial,
        severity=report.severity,
        score=report.score,
        runtime_ms=metrics.runtime_ms if metrics else None,
        used_gb_hours=metrics.used_gb_hours if metrics else None,
        wasted_gb_hours=metrics.wasted_gb_hours if metrics else None,
        metrics=_stored_metrics(metrics),
        warnings=validated(list(report.warnings), schema.Warnings),
        parse_stats=validated(report.parse_stats, schema.ParseStats),
        failure=_stored_failure(report),
        headline=validated(jsonb_safe([item.to_dict(SEVERITY_NAMES) for item in report.headline]), schema.Headline),
        what_if=None if report.what_if is None else validated(jsonb_safe(report.what_if.to_dict()), schema.WhatIf),
        severity_profile=report.severity_profile,
        spark_properties=report.spark_properties,
    )


def _stored_failure(report: AnalysisReport) -> dict[str, Any] | None:
    """The failure as it is stored (no NUL: a stack is untrusted text), checked against ``schema.Failure``; the
    pure analysis already capped its stack at 64 KiB."""
    if report.failure is None:
        return None
    stored: dict[str, Any] = validated(jsonb_safe(report.failure.to_dict()), schema.Failure)
    return stored


def _stored_metrics(metrics: AppMetrics | MapReduceMetrics | None) -> dict[str, Any]:
    """The metrics JSON as it is stored (``jsonb_safe``: NaN as null, an infinity as "inf"), checked against its
    dataclass's Struct; {} when they could not be computed (``schema.NoMetrics``)."""
    if metrics is None:
        return {}
    struct = schema.MapReduceMetrics if isinstance(metrics, MapReduceMetrics) else schema.SparkMetrics
    stored: dict[str, Any] = validated(jsonb_safe(metrics.to_dict()), struct)
    return stored


@transaction.atomic
def report_store(*, report: AnalysisReport, source: str, extra: Mapping[str, Any] | None = None) -> AnalyzedApp:
    """Store one report in one transaction; the same (source, app id, attempt) again replaces the earlier one.

    The app row is updated in place (its id, and so its URL, stays); its findings and summaries are replaced.
    ``extra`` sets further ``AnalyzedApp`` fields the report does not hold (cluster, the RM's view, timings).
    A stored JSON value out of its ``analyzer.schema`` shape (a pipeline change) raises ``ResultShapeError`` before
    anything is written.
    """
    _validate_rows_json(report)
    identity = _fit(AnalyzedApp, source=source, app_id=report.app_id, attempt_id=report.attempt_id or "")
    defaults = {**_app_values(report), **(extra or {})}
    app, _created = AnalyzedApp.objects.update_or_create(**identity, defaults=defaults)
    HeuristicResult.objects.filter(app=app).delete()  # details go by cascade
    StageSummary.objects.filter(app=app).delete()
    ExecutorSummary.objects.filter(app=app).delete()

    results = HeuristicResult.objects.bulk_create(
        HeuristicResult(
            app=app,
            **_fit(
                HeuristicResult,
                position=position,
                code=finding.code,
                name=finding.name,
                severity=finding.severity,
                rule_severity=finding.severity if finding.rule_severity is None else finding.rule_severity,
                score=finding.score,
                **_impact_columns(finding.impact),
                changes=[change.to_dict() for change in finding.changes],
                advice=finding.advice,
                observed=finding.observed,
                thresholds=finding.thresholds,
                stages=[list(key) for key in finding.stages],
                executors=list(finding.executors),
            ),
        )
        for position, finding in enumerate(report.findings)
    )
    HeuristicDetail.objects.bulk_create(
        HeuristicDetail(result=result, **_fit(HeuristicDetail, position=position, name=name, value=value))
        for result, finding in zip(results, report.findings, strict=True)
        for position, (name, value) in enumerate(finding.details)
    )
    _insert_rows(StageSummary, app, report.stages)
    _insert_rows(ExecutorSummary, app, report.executors)
    _store_host_tasks(app, report)
    executor_anomaly_store(app, report)  # in a savepoint: a failure is a warning on the app, never a lost app
    return app


def _impact_columns(impact: Impact | None) -> dict[str, Any]:
    """A finding's impact as its three columns (``Impact.to_dict()``'s rounding); all null when not estimated."""
    shown = {} if impact is None else impact.to_dict()
    return {
        "impact_wall_ms": shown.get("wall_ms"),
        "impact_share": shown.get("share_of_runtime"),
        "impact_gb_hours": shown.get("gb_hours"),
    }


def _validate_rows_json(report: AnalysisReport) -> None:
    """Every finding's observed values, executor's peak metrics and stage row's histogram and task times per host
    in their ``analyzer.schema`` shape: one conversion per column for the whole app (10k stage rows: ~50 ms), the
    rows stored unchanged."""
    validated([finding.observed for finding in report.findings], schema.FINDINGS_OBSERVED)
    validated([[c.to_dict() for c in finding.changes] for finding in report.findings], schema.FINDINGS_CHANGES)
    validated([row.peak_metrics for row in report.executors], schema.EXECUTOR_PEAK_METRICS)
    validated([row.task_duration_histogram for row in report.stages], schema.STAGE_HISTOGRAMS)
    validated([row.host_task_times for row in report.stages], schema.STAGE_HOST_TASK_TIMES)


def _store_host_tasks(app: AnalyzedApp, report: AnalysisReport) -> None:
    """The app's per-host z-score samples for the straggler ranking, replacing earlier ones (none in local mode)."""
    AppHostTasks.objects.filter(app=app).delete()
    AppHostTasks.objects.bulk_create(
        (
            AppHostTasks(
                app=app,
                cluster_id=app.cluster_id,
                end_time=app.end_time,
                **_fit(AppHostTasks, host=row.host, n_tasks=row.n_tasks, task_ms=row.task_ms),
                z=row.z,
                log_ratio_sum=row.log_ratio_sum,
            )
            for row in report.host_tasks
        ),
        batch_size=_BATCH_SIZE,
    )


@transaction.atomic
def app_delete(*, app: AnalyzedApp) -> None:
    """Delete one analyzed app with its findings and summaries."""
    app.delete()
