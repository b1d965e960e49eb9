"""``GET /api/v1/stage-anomalies?template=&cluster=``: the stored stage anomaly localization of a recurring job.

Reads what ``analyzer.stages.services`` stored (hourly by beat, or ``manage.py localize_stages``): per
(template, cluster) its categories (runs with one stage signature), each one's run-time CV against alpha and
whether it was analysed, the anomalous stages with their cosine and outlier runs (each with its app id, end, how
many times slower than usual, the hosts whose tasks were slow in it or that it was slow on every host, and its web
report and API URLs), the cross-category ranking, and one sentence per
anomalous stage. 404 when nothing is stored. The history API embeds the same objects (``stage_anomalies``)
when asked (``stage_anomalies=true``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analyzer.stages import schema
from analyzer.stages import selectors as stage_selectors
from webui.api.errors import COMMON, ErrorSerializer, query_flag
from webui.api.serializers import HistorySerializer
from webui.api.struct_schema import StructField
from webui.presenters import stages as stage_presenter


class SlowHostSerializer(serializers.Serializer[Any]):
    host = serializers.CharField()
    ratio = serializers.FloatField(
        help_text="Its mean task time in the stage over the mean of the stage's other tasks."
    )
    usual = serializers.FloatField(
        allow_null=True,
        help_text="The same ratio's median in the runs where the stage was not the outlier; null: "
        "the host is not listed there.",
    )
    tasks = serializers.IntegerField(help_text="Its successful tasks in the stage.")


class RunHostsSerializer(serializers.Serializer[Any]):
    # A string, not a choice field: drf-spectacular would name its enum after "verdict", which another schema uses.
    verdict = serializers.CharField(
        help_text='"hosts": the slow hosts are named; "everywhere": the stage was slow on every host (none stands '
        'out beyond its usual); "unknown": fewer than 3 hosts (local mode) or no host information.',
    )
    n_hosts = serializers.IntegerField(help_text="Hosts the stage's successful tasks ran on in this run.")
    slow_hosts = SlowHostSerializer(many=True, help_text="Slowest first; empty unless verdict is hosts.")


class OutlierRunSerializer(serializers.Serializer[Any]):
    run_id = serializers.CharField(help_text="The run's id in the stored result (the stored app's id).")
    app_id = serializers.CharField()
    attempt_id = serializers.CharField()
    end = serializers.DateTimeField(allow_null=True, help_text="When the run ended.")
    slowdown = serializers.FloatField(help_text="About how many times longer than usual the stage took in this run.")
    hosts = RunHostsSerializer(help_text="Where the stage's tasks were slow in this run.")
    report_url = serializers.SerializerMethodField(help_text="The run's report in the web UI; null when unknown.")
    url = serializers.SerializerMethodField(help_text="The run's API detail; null when unknown.")

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(OpenApiTypes.URI)
    def get_report_url(self, run: dict[str, Any]) -> str | None:
        return self._absolute(reverse("webui:app_report", args=[run["pk"]])) if run.get("pk") else None

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, run: dict[str, Any]) -> str | None:
        if not run.get("pk"):
            return None
        path = reverse("api:app_detail", kwargs={"app_id": run["app_id"]})
        query = {"attempt": run["attempt_id"]} if run.get("attempt_id") else {}
        if run.get("cluster"):
            query["cluster"] = run["cluster"]
        return self._absolute(path + (f"?{urlencode(query)}" if query else ""))


class StageFindingSerializer(serializers.Serializer[Any]):
    stage_id = serializers.CharField()
    name = serializers.CharField(help_text="The stage's name (its call site) in the category's latest run.")
    cosine = serializers.FloatField(help_text="cos(M_i, L_i) in log space: below beta, the stage is anomalous.")
    anomalous = serializers.BooleanField()
    evidence = serializers.FloatField(help_text="The ranking key: how far its outlier entries pass the threshold.")
    outlier_runs = OutlierRunSerializer(many=True, help_text="Most slowed first.")


class CategorySerializer(serializers.Serializer[Any]):
    signature = serializers.CharField(help_text="The stage signature shared by the category's runs.")
    runs = serializers.IntegerField()
    cv = serializers.FloatField(help_text="Coefficient of variation of the runs' run times.")
    alpha = serializers.FloatField(help_text="The CV above which a category is analysed.")
    gate = serializers.BooleanField(help_text="The CV is above alpha.")
    analysed = serializers.BooleanField()
    reason = serializers.CharField(help_text='Why it was not analysed; "" when it was.')
    sentences = serializers.ListField(child=serializers.CharField())
    stages = StageFindingSerializer(many=True, help_text="Every stage compared, anomalous ones first.")
    dropped_stages = serializers.ListField(child=serializers.CharField(), help_text="Missing in some runs.")


class StageRankSerializer(serializers.Serializer[Any]):
    stage_id = serializers.CharField()
    name = serializers.CharField()
    categories = serializers.IntegerField(help_text="Categories in which the stage was anomalous.")
    outlier_runs = serializers.IntegerField()
    min_cosine = serializers.FloatField()


class StageLocalizationSerializer(serializers.Serializer[Any]):
    template = serializers.CharField()
    cluster = serializers.CharField(help_text='"" for apps read from files.')
    computed_at = serializers.DateTimeField()
    latest_end = serializers.DateTimeField(allow_null=True, help_text="The newest run in the result ended then.")
    newest_run_end = serializers.DateTimeField(allow_null=True, help_text="The template's newest successful run.")
    stale = serializers.BooleanField(help_text="Runs ended after the result was computed: they are not in it yet.")
    n_runs = serializers.IntegerField()
    n_categories = serializers.IntegerField()
    n_anomalous = serializers.IntegerField(help_text="Categories with an anomalous stage.")
    params = StructField(
        schema.LocalizationParams | None, help_text="The thresholds it was computed with; null when unreadable."
    )
    reason = serializers.CharField(
        help_text='Why nothing could be analysed, or that the stored result cannot be read (compute it again); "" '
        "otherwise."
    )
    sentences = serializers.ListField(child=serializers.CharField(), help_text="One per anomalous stage.")
    categories = CategorySerializer(many=True)
    ranking = StageRankSerializer(many=True, help_text="(stage) most often anomalous across categories first.")


class StageAnomaliesSerializer(serializers.Serializer[Any]):
    template = serializers.CharField()
    cluster = serializers.CharField()
    localizations = StageLocalizationSerializer(many=True, help_text="One per cluster the template ran on.")


class HistoryWithStageAnomaliesSerializer(HistorySerializer):
    stage_anomalies = StageLocalizationSerializer(
        many=True,
        required=False,
        help_text="With stage_anomalies=true only: the stored stage localization of each template of these runs "
        "(one per cluster).",
    )


# The history's opt-in: its default answer keeps its two queries whatever the number of runs.
STAGE_ANOMALIES_PARAMETER = OpenApiParameter(
    "stage_anomalies", bool, description="Also return the stored stage anomaly localization of the runs' templates."
)


def wants_stage_anomalies(request: Request) -> bool:
    return query_flag(request.query_params.get("stage_anomalies"))


class StageAnomaliesQuerySerializer(serializers.Serializer[Any]):
    template = serializers.CharField(max_length=255, help_text="The recurring job's template key.")
    cluster = serializers.CharField(required=False, max_length=64, help_text="Only this cluster's result.")


def history_stage_anomalies(by: str, value: str, cluster: str) -> list[dict[str, Any]]:
    """The history API's ``stage_anomalies``: the stored results of the templates of its runs."""
    templates = stage_selectors.templates_for_history(by, value, cluster)
    return stage_presenter.localization_views(templates=templates, cluster=cluster)


class StageAnomaliesView(APIView):
    @extend_schema(
        operation_id="stage_anomalies_retrieve",
        summary="Which stage was the outlier in a recurring job's slow runs",
        description="The stored stage anomaly localization (CloudDiag: robust PCA over runs x stage durations in "
        "log space) of the template's latest successful runs, one per cluster: categories (runs with one stage "
        "signature) with their run-time CV against alpha, anomalous stages with their cosine and outlier runs "
        "(how many times slower than usual, the slow hosts or 'every host', report URLs), the ranking across "
        "categories, and one sentence per anomalous stage. Computed hourly for templates with new runs "
        "(manage.py localize_stages now).",
        parameters=[StageAnomaliesQuerySerializer],
        responses={
            **COMMON,
            200: StageAnomaliesSerializer,
            400: OpenApiResponse(ErrorSerializer, description="A query parameter is invalid."),
            404: OpenApiResponse(ErrorSerializer, description="No stored localization of that template."),
        },
    )
    def get(self, request: Request) -> Response:
        query = StageAnomaliesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        template, cluster = query.validated_data["template"], query.validated_data.get("cluster", "")
        # PostgreSQL text cannot hold NUL, so nothing stored has one: such a request matches nothing.
        nul = "\x00" in template or "\x00" in cluster
        views = [] if nul else stage_presenter.localization_views(templates=[template], cluster=cluster)
        if not views:
            on = f" on cluster {cluster[:64]!r}" if cluster else ""
            raise exceptions.NotFound(
                f"No stage anomaly localization of template {template[:300]!r}{on}. It is computed hourly for "
                "templates with new runs and enough successful ones (HINDSIGHT_STAGE_LOCALIZATION_MIN_RUNS), or now "
                "with `manage.py localize_stages --template TEMPLATE`."
            )
        body = {"template": template, "cluster": cluster, "localizations": views}
        return Response(StageAnomaliesSerializer(body, context={"request": request}).data)
