"""JSON shapes of the API. Values are data, returned as JSON strings as stored (JSON is not HTML: a client that
renders them escapes them)."""

from __future__ import annotations

import copy
import functools
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import msgspec
from django.db.models import Model
from django.urls import get_script_prefix, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject, RelatedField

from analyzer import schema
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, HeuristicResult, Severity, StageSummary
from analyzer.selectors import flows as flow_selectors
from analyzer.selectors import gate as gate_selectors
from analyzer.selectors import report as report_selectors
from analyzer.stored_results import UnreadableResult, decode
from webui.api.struct_schema import StructField
from webui.presenters import attribution as attribution_presenter
from webui.presenters.executors import api_summary as executor_anomaly_summary

SEVERITY_NAMES = [level.name for level in Severity]

_M = TypeVar("_M", bound=Model)


class ReadModelSerializer(serializers.ModelSerializer[_M]):
    """A read-only ModelSerializer that builds its fields from the model once per class, not once per use.

    DRF's ModelSerializer introspects the model again for every serializer instance, nested ones included: ~7 ms
    of a ~35 ms app detail (benchmarks/bench_web.py, docs/benchmarks/web.md). The built fields depend only on the
    class, so the first build is kept and each instance gets copies, as fields are bound to their parent: a
    shallow copy of a plain field (binding sets attributes on the copy; nothing read-only mutates the rest), a
    deep one of a nested serializer (it holds its own bound fields). A deep copy of every field costs half the
    build again.
    """

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        built: dict[str, serializers.Field[Any, Any, Any, Any]] | None = type(self).__dict__.get("_built_fields")
        if built is None:
            built = super().get_fields()
            type(self)._built_fields = built  # type: ignore[attr-defined]  # per class: subclasses build their own
        return {
            name: copy.deepcopy(field) if isinstance(field, serializers.BaseSerializer) else copy.copy(field)
            for name, field in built.items()
        }

    def to_representation(self, instance: _M) -> dict[str, Any]:
        # DRF's loop, with each field's reading planned once per serializer (a list's rows share its child):
        # a model column is read with getattr and the plain types converted inline, which halves the time of a
        # 50-app page (~9 ms -> ~4 ms). Anything else goes through the field as DRF would.
        readers: list[tuple[str, Any]] | None = self.__dict__.get("_readers")
        if readers is None:
            model: type[Model] = self.Meta.model
            columns = {f.name for f in model._meta.get_fields()}
            readers = [(str(field.field_name), _reader(field, columns)) for field in self._readable_fields]
            self.__dict__["_readers"] = readers
        shown: dict[str, Any] = {}
        for name, read in readers:
            value = read(instance)
            if value is not _SKIP:
                shown[name] = value
        return shown


_SKIP: Any = object()
# Field classes whose to_representation is exactly this conversion (subclasses may differ: exact types only).
_PLAIN: dict[type[Any], Any] = {
    serializers.CharField: str,
    serializers.IntegerField: int,
    serializers.FloatField: float,
}


def _reader(field: serializers.Field[Any, Any, Any, Any], columns: set[str]) -> Any:
    attrs = field.source_attrs
    pk_only = isinstance(field, RelatedField) and field.use_pk_only_optimization()  # DRF reads no related row
    if len(attrs) == 1 and attrs[0] in columns and not isinstance(field, serializers.BaseSerializer) and not pk_only:
        attr, convert = attrs[0], _PLAIN.get(type(field), field.to_representation)

        def read_column(instance: Any) -> Any:
            value = getattr(instance, attr)
            return None if value is None else convert(value)

        return read_column

    def read_field(instance: Any) -> Any:  # rest_framework.serializers.Serializer.to_representation's body
        try:
            attribute = field.get_attribute(instance)
        except SkipField:
            return _SKIP
        checked = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
        return None if checked is None else field.to_representation(attribute)

    return read_field


@extend_schema_field({"type": "string", "enum": SEVERITY_NAMES})
class SeverityField(serializers.Field[int, int, str, Any]):
    """A severity as its name (NONE..CRITICAL); the number is given beside it as ``severity_level``."""

    def to_representation(self, value: int) -> str:
        return Severity(value).name

    def to_internal_value(self, data: Any) -> int:  # pragma: no cover - the API is read-only
        level = gate_selectors.parse_severity(str(data))
        if level is None:
            raise serializers.ValidationError("Unknown severity.")
        return level


# What reverse() leaves unquoted in a path (django.urls.resolvers); an app id is data and may hold any character.
_PATH_SAFE = "!$&'()*+,;=/~:@"


@functools.cache
def _detail_prefix(script_prefix: str) -> str:
    # reverse() puts the script prefix (the WSGI SCRIPT_NAME) in front: one entry per prefix served.
    return reverse("api:app_detail", kwargs={"app_id": "-"}).removesuffix("-")


def detail_url(serializer: serializers.Serializer[Any], app: AnalyzedApp) -> str:
    """The API detail URL of ``app`` (this attempt, this cluster), absolute when the context has the request.

    The same URL as ``reverse("api:app_detail", ...)`` and ``request.build_absolute_uri``, but those cost ~0.1 ms
    per row (a 50-app page: 5 ms), so the path prefix is reversed once per script prefix, made absolute once per
    serializer, and the quoted id appended.
    """
    base: str | None = serializer.__dict__.get("_detail_base")
    if base is None:
        prefix = _detail_prefix(get_script_prefix())
        request = serializer.context.get("request")
        base = request.build_absolute_uri(prefix) if request is not None else prefix
        serializer.__dict__["_detail_base"] = base
    query = {"attempt": app.attempt_id} if app.attempt_id else {}
    if app.cluster is not None:
        query["cluster"] = app.cluster.name
    return base + quote(app.app_id, safe=_PATH_SAFE) + (f"?{urlencode(query)}" if query else "")


SCORE_HELP = (
    "The estimated cost in GB-seconds: executor memory held for the time the findings lost, or wasted "
    '(docs/IMPACT.md, "Score"); 0 when no cost was estimated. Ordering by score orders by cost.'
)


class AppSummarySerializer(ReadModelSerializer[AnalyzedApp]):
    """An app as lists show it."""

    cluster: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    severity = SeverityField(read_only=True)
    severity_level = serializers.IntegerField(source="severity", read_only=True)
    score = serializers.IntegerField(read_only=True, help_text=SCORE_HELP)
    url = serializers.SerializerMethodField(help_text="This app's detail (this attempt).")

    class Meta:
        model = AnalyzedApp
        fields = [
            "app_id",
            "attempt_id",
            "url",
            "cluster",
            "source",
            "app_type",
            "name",
            "user",
            "queue",
            "job_type",
            "status",
            "partial",
            "severity",
            "severity_level",
            "score",
            "start_time",
            "end_time",
            "runtime_ms",
            "used_gb_hours",
            "wasted_gb_hours",
            "scheduler",
            "flow_def_id",
            "flow_exec_id",
            "job_def_id",
            "template",
            "analyzed_at",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, app: AnalyzedApp) -> str:
        return detail_url(self, app)


class HeuristicDetailSerializer(ReadModelSerializer[HeuristicDetail]):
    class Meta:
        model = HeuristicDetail
        fields = ["name", "value"]
        read_only_fields = fields


class FindingSerializer(ReadModelSerializer[HeuristicResult]):
    """One heuristic's verdict on an app, with its details table."""

    severity = SeverityField(read_only=True)
    severity_level = serializers.IntegerField(source="severity", read_only=True)
    observed = StructField(
        schema.Observed,
        read_only=True,
        help_text='What the heuristic measured, by name: a number, a string (an infinite ratio is "inf"), a boolean, '
        "or null when not measured; under a key its thresholds name, the worst value judged against them.",
    )
    thresholds = serializers.JSONField(
        read_only=True, help_text="The heuristic's settings as it applied them: its own shape (custom ones too)."
    )
    details = HeuristicDetailSerializer(many=True, read_only=True)
    score = serializers.IntegerField(
        read_only=True, help_text="The finding's estimated cost in GB-seconds; 0 when its cost was not estimated."
    )
    rule_severity = serializers.SerializerMethodField(
        help_text="The heuristic's own severity before the severity profile bounded it by cost (the severity, for "
        "findings stored before rule severities were kept)."
    )
    impact = serializers.SerializerMethodField(
        help_text="What fixing it would save: wall-clock ms, that as a share of the runtime, and GB-hours; null when "
        "its cost was not estimated."
    )
    changes = StructField(
        schema.Changes, read_only=True, help_text="What to change, each with its value computed from this app."
    )

    class Meta:
        model = HeuristicResult
        fields = [
            "code",
            "name",
            "severity",
            "severity_level",
            "rule_severity",
            "score",
            "impact",
            "changes",
            "advice",
            "observed",
            "thresholds",
            "stages",
            "executors",
            "details",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "string", "enum": SEVERITY_NAMES})
    def get_rule_severity(self, result: HeuristicResult) -> str:
        return Severity(result.severity if result.rule_severity is None else result.rule_severity).name

    @extend_schema_field(StructField(schema.Impact | None, allow_null=True))
    def get_impact(self, result: HeuristicResult) -> dict[str, Any] | None:
        impact = report_selectors.finding_impact(result)
        return None if impact is None else msgspec.to_builtins(impact)


class StoredJSONField(StructField):
    """A per-app JSON column served as stored, documented by its ``analyzer.schema`` Struct; null, and logged,
    when the stored value does not decode (``analyzer.stored_results.decode``). The stored value is served rather
    than the decoded Struct so that an answer is byte for byte what it was (an empty ``{}`` stays ``{}``)."""

    def __init__(self, struct: type[msgspec.Struct], what: str, **kwargs: Any) -> None:
        self.what = what
        self.decoded_as = struct
        super().__init__(struct | None, source="*", **kwargs)  # the row, so a log names it

    def to_representation(self, value: Any) -> Any:
        stored = getattr(value, str(self.field_name))
        try:
            decode(stored, self.decoded_as, what=self.what, row=f"{type(value).__name__} {value.pk}")
        except UnreadableResult:
            return None
        return stored


class TaskDurationHistogramField(StoredJSONField):
    """A stage's stored task-duration histogram (``analyzer.schema.TaskDurationHistogram``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(schema.TaskDurationHistogram, "stage task-duration histogram", **kwargs)


class HostTaskTimesField(StoredJSONField):
    """A stage's stored task times per host (``analyzer.schema.HostTaskTimes``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(schema.HostTaskTimes, "stage task times per host", **kwargs)


class StageSerializer(ReadModelSerializer[StageSummary]):
    task_duration_histogram = TaskDurationHistogramField(
        read_only=True, help_text="Empty when no task succeeded; null when the stored value cannot be read."
    )
    host_task_times = HostTaskTimesField(
        read_only=True, help_text="Empty when no task had a known host; null when the stored value cannot be read."
    )

    class Meta:
        model = StageSummary
        exclude = ["id", "app"]
        read_only_fields = [f.name for f in StageSummary._meta.fields if f.name not in ("id", "app")]


class ExecutorSerializer(ReadModelSerializer[ExecutorSummary]):
    peak_metrics = StructField(
        schema.PeakMetrics,
        read_only=True,
        help_text="The largest value of each executor metric Spark logged (JVMHeapMemory, TotalGCTime, ...: bytes, "
        "milliseconds or counts, as Spark names them); {} when none was logged.",
    )

    class Meta:
        model = ExecutorSummary
        exclude = ["id", "app"]
        read_only_fields = [f.name for f in ExecutorSummary._meta.fields if f.name not in ("id", "app")]


class AttemptSerializer(ReadModelSerializer[AnalyzedApp]):
    """Another stored row of the same app id (another attempt, or the same id read from another source)."""

    cluster: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    severity = SeverityField(read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = AnalyzedApp
        fields = ["attempt_id", "cluster", "source", "status", "start_time", "end_time", "severity", "score", "url"]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, app: AnalyzedApp) -> str:
        return detail_url(self, app)


class JobInfoSerializer(serializers.Serializer[AnalyzedApp]):
    """The scheduler linkage of a recurring job ("" when the app ran ad hoc)."""

    scheduler = serializers.CharField()
    job_name = serializers.CharField()
    flow_def_id = serializers.CharField()
    flow_def_url = serializers.CharField()
    flow_exec_id = serializers.CharField()
    flow_exec_url = serializers.CharField()
    job_def_id = serializers.CharField()
    job_def_url = serializers.CharField()
    job_exec_id = serializers.CharField()
    job_exec_url = serializers.CharField()
    template = serializers.CharField()


class AttributionMemberSerializer(serializers.Serializer[Any]):
    """One measured feature of a cause: this run's value against the template's usual one."""

    name = serializers.CharField(help_text="Feature name (analysis.attribution.FEATURES).")
    description = serializers.CharField()
    unit = serializers.CharField(help_text='bytes, s, share, ratio, MiB, a count\'s noun, or "" for a category.')
    value = serializers.JSONField(help_text="This run's value: a number, a string for a category, null if absent.")
    baseline = serializers.JSONField(help_text="The template's usual value, as value.")
    z = serializers.FloatField(allow_null=True, help_text="Robust z against the template's runs (3: changed).")
    delta_s = serializers.FloatField(allow_null=True, help_text="Saabas delta contribution, seconds (+ slower).")


class AttributionCauseSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # the field, not Field.label
    description = serializers.CharField()
    tag = serializers.ChoiceField(choices=["user", "system"], help_text="user: data and code; system: cluster.")
    effect_s = serializers.FloatField(allow_null=True, help_text="Seconds the cause added (+) or saved (-).")
    effect_abs_s = serializers.FloatField(allow_null=True)
    unusual = serializers.BooleanField(
        help_text="A member is unusual for the template the slow way (z >= 3 where more is slower; a setting "
        "|z| >= 3 or a changed category)."
    )
    shown = serializers.BooleanField(
        help_text="A member moved the way of the effect by a robust standard deviation or more (the slow way for "
        "an effect that slowed the run, the time-saving way for one that saved time): the report lists it."
    )
    rank = serializers.IntegerField(allow_null=True, help_text="Rank among the shown causes; null if not shown.")
    members = AttributionMemberSerializer(many=True)


class AttributionConfidenceSerializer(serializers.Serializer[Any]):
    level = serializers.ChoiceField(
        choices=["high", "medium", "low"], help_text="low: the cause is likely outside the measured features."
    )
    message = serializers.CharField()
    rel_error = serializers.FloatField(allow_null=True, help_text="|predicted - actual| / actual.")
    interval_s = serializers.ListField(child=serializers.FloatField(allow_null=True), help_text="Per-tree 5-95%.")
    inside_interval = serializers.BooleanField()
    explained_share = serializers.FloatField(allow_null=True)


class AttributionExplanationSerializer(serializers.Serializer[Any]):
    template = serializers.CharField()
    mode = serializers.CharField()
    actual_s = serializers.FloatField()
    predicted_s = serializers.FloatField(allow_null=True)
    baseline_s = serializers.FloatField(allow_null=True, help_text="The template's usual runtime.")
    predicted_baseline_s = serializers.FloatField(allow_null=True)
    slowdown_s = serializers.FloatField(allow_null=True, help_text="actual_s - baseline_s.")
    confidence = AttributionConfidenceSerializer()
    causes = AttributionCauseSerializer(many=True, help_text="Most likely first.")
    no_effect = serializers.ListField(child=serializers.CharField(), help_text="Labels of causes not shown.")
    features = serializers.ListField(child=serializers.CharField(), help_text="Features by delta contribution.")
    baseline_borrowed = serializers.BooleanField(help_text="The template had too few runs: its usual is borrowed.")
    donors = serializers.ListField(child=serializers.CharField(), help_text="Templates it borrows from.")
    context_delta_s = serializers.FloatField(allow_null=True)


class AttributionBaselineRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    app_id = serializers.CharField()
    end_time = serializers.DateTimeField(allow_null=True)
    runtime_ms = serializers.IntegerField(allow_null=True)
    url = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, run: dict[str, Any]) -> str:
        path = reverse("api:app_detail", kwargs={"app_id": run["app_id"]})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class AttributionSerializer(serializers.Serializer[Any]):
    """Why this run was slower than usual (analyzer.attribution.selectors), or why there is no answer."""

    available = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="Why there is no answer; null when available.")
    warning = serializers.BooleanField(help_text="The reason is a failure, not a normal absence.")
    model_version = serializers.IntegerField(allow_null=True)
    slower_than_usual = serializers.BooleanField(allow_null=True, help_text="More than 10% over the usual runtime.")
    notes = serializers.ListField(child=serializers.CharField())
    explanation = AttributionExplanationSerializer(allow_null=True)
    baseline_runs = AttributionBaselineRunSerializer(many=True, help_text="The usual runs it is compared with.")


class ExecutorAnomalySummarySerializer(serializers.Serializer[Any]):
    """The app detail's short executor anomaly answer (webui.presenters.executors.api_summary)."""

    model = serializers.CharField(help_text="peers, reference or none (analyzer.executors.schema.Model).")
    top_executor = serializers.CharField(allow_null=True, help_text="The most anomalous executor; null: none ranked.")
    host = serializers.CharField(allow_null=True)
    worst_feature = serializers.CharField(allow_null=True, help_text="Its most anomalous feature.")
    worst_z = serializers.FloatField(allow_null=True)


class AppDetailSerializer(AppSummarySerializer):
    """Everything the report page shows."""

    metrics = StructField(
        schema.APP_METRICS,
        read_only=True,
        help_text="App-level metrics by key, as app_type has them ({} when they could not be computed); a metric is "
        "null when the log did not tell.",
    )
    metric_notes = serializers.SerializerMethodField()
    warnings = StructField(
        schema.Warnings, read_only=True, help_text="What the analysis could not read or compute, one sentence each."
    )
    failure = StructField(
        schema.Failure | None,
        read_only=True,
        allow_null=True,
        help_text="Why the app (or a job of it) failed: the real exception (a Python error's own class and message, "
        "not PythonException), the failing stage, job and task with its attempts, and the stack (at most 64 KiB); "
        "null when nothing failed, and for apps analyzed before failures were recorded.",
    )
    headline = serializers.SerializerMethodField(
        help_text="The findings that cost the most (at most three, the costliest first), each with its cost in a "
        "sentence and its changes; [] when nothing is worth changing (and for apps analyzed before costs were "
        "estimated: severity_profile is then empty)."
    )
    what_if = StoredJSONField(
        schema.WhatIf,
        "what-if",
        read_only=True,
        allow_null=True,
        help_text="The run replayed at other executor counts: runtime by count, the critical path, the ideal count "
        "and the replay's error against the real runtime; null when it could not be computed (MapReduce, no "
        "tasks, apps analyzed before it existed) or the stored value cannot be read.",
    )
    severity_profile = serializers.CharField(
        read_only=True,
        help_text='The severity profile the findings were judged under: "impact" (bounded by cost) or "drelephant"; '
        '"" for apps analyzed before profiles existed.',
    )
    spark_properties = serializers.JSONField(read_only=True, help_text="Spark properties, secrets redacted.")
    yarn = serializers.JSONField(read_only=True, help_text="The ResourceManager's view of the app; {} when none.")
    job = serializers.SerializerMethodField()
    spark_version = serializers.CharField(read_only=True)
    analysis_ms = serializers.IntegerField(read_only=True, allow_null=True)
    heuristics = FindingSerializer(source="heuristic_results", many=True, read_only=True)
    stages = StageSerializer(source="stage_summaries", many=True, read_only=True)
    executors = serializers.SerializerMethodField()
    attempts = serializers.SerializerMethodField(help_text="Every stored row of this app id, this one included.")
    attribution = serializers.SerializerMethodField(
        help_text="Why this run was slower than usual; available false with the reason when there is no answer."
    )
    executor_anomaly = serializers.SerializerMethodField(
        help_text="Which executor is odd, in short: model, top_executor, host, worst_feature, worst_z (the whole "
        "answer is at apps/<id>/executor-anomalies); null for MapReduce jobs and apps analyzed before the ranking "
        "existed."
    )

    class Meta(AppSummarySerializer.Meta):
        fields = [
            *AppSummarySerializer.Meta.fields,
            "spark_version",
            "analysis_ms",
            "metrics",
            "metric_notes",
            "failure",
            "headline",
            "what_if",
            "severity_profile",
            "warnings",
            "spark_properties",
            "yarn",
            "job",
            "heuristics",
            "stages",
            "executors",
            "attempts",
            "attribution",
            "executor_anomaly",
        ]
        read_only_fields = fields

    @extend_schema_field(StructField(schema.Headline))
    def get_headline(self, app: AnalyzedApp) -> list[Any]:
        return [msgspec.to_builtins(item) for item in report_selectors.stored_headline(app)]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_metric_notes(self, app: AnalyzedApp) -> list[str]:
        notes = app.metrics.get("notes") if isinstance(app.metrics, dict) else None
        if not notes:
            return []
        return [n if isinstance(n, str) else str(n) for n in (notes if isinstance(notes, list) else [notes])]

    @extend_schema_field(JobInfoSerializer)
    def get_job(self, app: AnalyzedApp) -> dict[str, Any]:
        return dict(JobInfoSerializer(app).data)

    @extend_schema_field(ExecutorSerializer(many=True))
    def get_executors(self, app: AnalyzedApp) -> list[Any]:
        executors = self.context.get("executors", app.executor_summaries.all())
        return list(ExecutorSerializer(executors, many=True).data)

    @extend_schema_field(AttemptSerializer(many=True))
    def get_attempts(self, app: AnalyzedApp) -> list[Any]:
        return list(AttemptSerializer(self.context.get("attempts", []), many=True, context=self.context).data)

    @extend_schema_field(AttributionSerializer)
    def get_attribution(self, app: AnalyzedApp) -> dict[str, Any]:
        return dict(AttributionSerializer(attribution_presenter.app_attribution(app), context=self.context).data)

    @extend_schema_field(ExecutorAnomalySummarySerializer(allow_null=True))
    def get_executor_anomaly(self, app: AnalyzedApp) -> dict[str, Any] | None:
        return executor_anomaly_summary(app)


class LevelsSerializer(serializers.Serializer[Any]):
    setting = serializers.CharField()
    levels = serializers.ListField(child=serializers.FloatField(), help_text="LOW, MODERATE, SEVERE, CRITICAL bounds.")


class CatalogHeuristicSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    name = serializers.CharField()
    app_types = serializers.ListField(child=serializers.CharField())
    summary = serializers.CharField()
    help_text = serializers.CharField(  # type: ignore[assignment]  # the field, not Field.help_text
        help_text="The heuristic's documentation, plain text."
    )
    help_url = serializers.CharField()
    thresholds = LevelsSerializer(many=True, help_text="Four-level thresholds as currently configured.")
    settings = serializers.DictField(child=serializers.JSONField(), help_text="Every other configured setting.")


class CatalogSerializer(serializers.Serializer[Any]):
    heuristics = CatalogHeuristicSerializer(many=True)
    error = serializers.CharField(allow_null=True, help_text="Why the catalogue is empty, when it cannot load.")


class FailedAppSerializer(serializers.Serializer[Any]):
    app_id = serializers.CharField()
    attempt_id = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)
    tries = serializers.IntegerField()
    error = serializers.CharField(help_text="Secrets masked.")


class SourceStatusSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    backend = serializers.CharField()
    backend_label = serializers.CharField()
    enabled = serializers.BooleanField()
    state = serializers.CharField(help_text="disabled, error, never polled or ok.")
    params = serializers.DictField(child=serializers.CharField(), help_text="Parameters; secrets masked.")
    poll_interval_s = serializers.IntegerField()
    last_poll_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    checkpoint = serializers.DateTimeField(allow_null=True)
    checkpoint_lag_s = serializers.FloatField(allow_null=True)
    behind = serializers.IntegerField(help_text="Apps listed and not analyzed yet.")
    oldest_behind = serializers.DateTimeField(allow_null=True)
    failed = serializers.IntegerField(help_text="Apps given up on.")
    last_error = serializers.CharField(help_text="Secrets masked.")
    recent_failures = FailedAppSerializer(many=True)


class ClusterSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    sources = SourceStatusSerializer(many=True)


class GateFindingSerializer(FindingSerializer):
    """A judged finding with the app it is about (a flow run's gate judges several apps)."""

    app_id = serializers.CharField(source="app.app_id", read_only=True)
    attempt_id = serializers.CharField(source="app.attempt_id", read_only=True)
    cluster = serializers.CharField(source="app.cluster.name", read_only=True, allow_null=True)

    class Meta(FindingSerializer.Meta):
        fields = ["app_id", "attempt_id", "cluster", *FindingSerializer.Meta.fields]
        read_only_fields = fields


class GateSerializer(serializers.Serializer[Any]):
    verdict = serializers.ChoiceField(choices=["pass", "fail"])
    severity = serializers.ChoiceField(choices=SEVERITY_NAMES, help_text="The worst judged finding, of any app.")
    max_severity = serializers.ChoiceField(choices=SEVERITY_NAMES)
    reason = serializers.CharField(help_text="One line, for a CI log.")
    flow_exec_id = serializers.CharField(
        allow_null=True, help_text="The judged flow run (flow_def_id= judges its latest run); null otherwise."
    )
    app = AppSummarySerializer(help_text="The latest ended judged app (the only one unless a flow run is judged).")
    apps = AppSummarySerializer(many=True, help_text="Every judged app, latest ended first.")
    failed = GateFindingSerializer(
        many=True, help_text="The judged findings above max_severity, most severe first, each naming its app."
    )


class AnalyzeRequestEchoSerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField()
    app_id = serializers.CharField(help_text="The app id as recorded for the cluster (a job id becomes its app id).")
    attempt_id = serializers.CharField(help_text="The attempt, or empty for the latest the source gives.")
    # The declared field replaces DRF's Field.source attribute (the metaclass collects it); mypy sees the clash.
    source = serializers.CharField(help_text="The source that fetches it: <cluster>/<backend>.")  # type: ignore[assignment]
    claim_state = serializers.CharField(
        help_text="retry (waiting), claimed (being analyzed), done, failed, or not_found (no source listed the app "
        "and the source has no such app)."
    )
    rearmed = serializers.BooleanField(help_text="True when the app was recorded before (analyzed again).")
    listed = serializers.BooleanField(
        help_text="False while only on-demand requests name the app: no source listed it and no fetch found it yet."
    )
    requested_at = serializers.DateTimeField()
    last_error = serializers.CharField(help_text="The last fetch error of this app, empty when none.")
    wait_s = serializers.IntegerField(help_text="The seconds waited at most: the asked wait_s, or the caller's cap.")
    max_wait_s = serializers.IntegerField(
        help_text="The caller's cap on wait_s: HINDSIGHT_ANALYZE_MAX_WAIT_S (default 30), 300 for staff."
    )
    wait_capped = serializers.BooleanField(help_text="True when the asked wait_s was above max_wait_s and clamped.")


class AnalyzeQueuedSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=["queued"])
    request = AnalyzeRequestEchoSerializer()
    poll = serializers.URLField(help_text="The gate of this app: it answers 200 once the app is analyzed.")


class AnalyzedVerdictSerializer(GateSerializer):
    status = serializers.ChoiceField(choices=["analyzed"])
    request = AnalyzeRequestEchoSerializer()


@extend_schema_field(
    {"type": "object", "additionalProperties": {"type": "string", "enum": SEVERITY_NAMES}, "example": {}}
)
class SeverityMapField(serializers.Field[dict[str, int], dict[str, int], dict[str, str], Any]):
    """Each heuristic's severity by code, as names: ``{"spark.task_skew": "SEVERE"}``."""

    def to_representation(self, value: dict[str, int]) -> dict[str, str]:
        return {str(code): Severity(level).name for code, level in value.items()}


class FlowAppSerializer(AppSummarySerializer):
    """An app of a flow run, with its job's ids and each heuristic's severity."""

    heuristics = serializers.SerializerMethodField(help_text="Each heuristic's severity by code.")

    class Meta(AppSummarySerializer.Meta):
        fields = [*AppSummarySerializer.Meta.fields, "job_exec_id", "job_name", "heuristics"]
        read_only_fields = fields

    @extend_schema_field(SeverityMapField)
    def get_heuristics(self, app: AnalyzedApp) -> dict[str, str]:
        found = self.context.get("heuristics", {})
        return SeverityMapField().to_representation(found.get(app.pk, {}))


class RunTotalsSerializer(serializers.Serializer[Any]):
    apps = serializers.IntegerField()
    start_time = serializers.DateTimeField(allow_null=True, help_text="The first app's start.")
    end_time = serializers.DateTimeField(allow_null=True, help_text="The last app's end.")
    wall_ms = serializers.IntegerField(allow_null=True, help_text="From the first start to the last end.")
    runtime_ms = serializers.IntegerField(allow_null=True, help_text="The apps' runtimes summed.")
    used_gb_hours = serializers.FloatField(allow_null=True, help_text="Summed over the apps that tell.")
    wasted_gb_hours = serializers.FloatField(allow_null=True, help_text="Summed over the apps that tell.")
    score = serializers.IntegerField(help_text="The apps' scores summed.")
    severity = SeverityField(help_text="The worst app's.")
    severity_level = serializers.IntegerField(source="severity")


class FlowRunSummarySerializer(serializers.Serializer[Any]):
    """A flow execution's identity and totals."""

    flow_exec_id = serializers.CharField()
    flow_exec_url = serializers.CharField()
    flow_def_id = serializers.CharField()
    flow_def_url = serializers.CharField()
    scheduler = serializers.CharField()
    totals = RunTotalsSerializer()


class FlowRunSerializer(FlowRunSummarySerializer):
    """One flow execution: its identity, totals and every app by start time."""

    apps = serializers.SerializerMethodField()

    @extend_schema_field(FlowAppSerializer(many=True))
    def get_apps(self, run: flow_selectors.FlowRun) -> list[Any]:
        context = {**self.context, "heuristics": run.heuristics}
        return list(FlowAppSerializer(run.apps, many=True, context=context).data)


class HistoryPointSerializer(serializers.Serializer[Any]):
    """One run: an app (job or template history) or a flow execution (flow history, its apps aggregated)."""

    key = serializers.CharField(help_text="The app id, or the flow execution id.")
    attempt_id = serializers.CharField()
    cluster = serializers.CharField(help_text='"" for logs from files, or a flow run spread over clusters.')
    apps = serializers.IntegerField(help_text="Apps in the run (1 for an app).")
    start_time = serializers.DateTimeField(allow_null=True)
    end_time = serializers.DateTimeField(allow_null=True)
    runtime_ms = serializers.IntegerField(allow_null=True, help_text="A flow run's wall span, first start to last end.")
    app_runtime_ms = serializers.IntegerField(allow_null=True, help_text="The apps' runtimes summed.")
    used_gb_hours = serializers.FloatField(allow_null=True)
    wasted_gb_hours = serializers.FloatField(allow_null=True)
    score = serializers.IntegerField()
    severity = SeverityField()
    severity_level = serializers.IntegerField(source="severity")
    heuristics = SeverityMapField(help_text="Each heuristic's severity (a flow run's worst) by code.")


class HistorySerializer(serializers.Serializer[Any]):
    by = serializers.ChoiceField(choices=["job_def_id", "flow_def_id", "template"])
    value = serializers.CharField()
    cluster = serializers.CharField()
    limit = serializers.IntegerField()
    points = HistoryPointSerializer(many=True, help_text="Oldest first.")


class HeuristicChangeSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    a = SeverityField(allow_null=True, help_text="null: no finding in run a.")
    b = SeverityField(allow_null=True, help_text="null: no finding in run b.")


class ComparedJobSerializer(serializers.Serializer[Any]):
    """One job of the two runs; a or b is null when the job ran on one side only. Differences are b - a."""

    job_def_id = serializers.CharField()
    job_name = serializers.CharField()
    matched = serializers.BooleanField()
    a = serializers.SerializerMethodField()
    b = serializers.SerializerMethodField()
    runtime_ms = serializers.IntegerField(allow_null=True)
    used_gb_hours = serializers.FloatField(allow_null=True)
    wasted_gb_hours = serializers.FloatField(allow_null=True)
    score = serializers.IntegerField(allow_null=True)
    severity = serializers.IntegerField(allow_null=True, help_text="Severity levels b - a.")
    heuristics = HeuristicChangeSerializer(many=True, help_text="Heuristics whose severity changed.")

    def _side(self, app: AnalyzedApp | None) -> Any:
        if app is None:
            return None
        return FlowAppSerializer(app, context=self.context).data

    @extend_schema_field(FlowAppSerializer(allow_null=True))
    def get_a(self, job: flow_selectors.ComparedJob) -> Any:
        return self._side(job.a)

    @extend_schema_field(FlowAppSerializer(allow_null=True))
    def get_b(self, job: flow_selectors.ComparedJob) -> Any:
        return self._side(job.b)


class TotalsDifferenceSerializer(serializers.Serializer[Any]):
    apps = serializers.IntegerField()
    wall_ms = serializers.IntegerField(allow_null=True)
    runtime_ms = serializers.IntegerField(allow_null=True)
    used_gb_hours = serializers.FloatField(allow_null=True)
    wasted_gb_hours = serializers.FloatField(allow_null=True)
    score = serializers.IntegerField()
    severity = serializers.IntegerField(help_text="Severity levels b - a.")


class ComparisonSerializer(serializers.Serializer[Any]):
    a = FlowRunSummarySerializer()
    b = FlowRunSummarySerializer()
    difference = TotalsDifferenceSerializer(help_text="Totals b - a (null when either side does not tell).")
    jobs = ComparedJobSerializer(many=True, help_text="Matched jobs in a's start order, then a's unmatched, then b's.")
