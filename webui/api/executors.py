"""``GET /api/v1/apps/<app id>/executor-anomalies``: which executor of an app is odd, and in what (issue 7).

The app is chosen as for the app detail (``attempt=``, ``cluster=``); the answer is
``webui.presenters.executors.api_answer``'s: the stored ranking, the model (peers / reference / none), the reference
runs and the feature rows, and with ``series=1`` the per-task series sample, each documented by its stored schema
(``analyzer.executors.schema``). Apps stored before the ranking existed, MapReduce jobs and reports that cannot be
read answer ``available: false`` with the reason.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analyzer.executors import schema
from webui.api.errors import COMMON, NOT_FOUND, query_flag
from webui.api.struct_schema import StructField
from webui.api.views import APP_CHOICE_PARAMETERS, app_rows
from webui.presenters.executors import api_answer


class AppRefSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    app_id = serializers.CharField()
    attempt_id = serializers.CharField()
    cluster = serializers.CharField(allow_null=True)


class ReferenceRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    app_id = serializers.CharField()
    attempt_id = serializers.CharField()
    end_time = serializers.CharField(allow_null=True, help_text="ISO 8601.")
    url = serializers.CharField(help_text="The run's report page.")


class ExecutorAnomalySerializer(serializers.Serializer[Any]):
    """Which executor of this app is odd (analysis.executors), or why there is no answer."""

    app = AppRefSerializer()
    available = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="Why there is no answer; null when available.")
    model = serializers.ChoiceField(
        ["peers", "reference", "none"],
        required=False,
        help_text="peers: compared with the app's other executors; reference: with the executors of the template's "
        "recent runs (the app had too few); none: not ranked.",
    )
    computed_at = serializers.CharField(required=False)
    reference_apps = ReferenceRunSerializer(many=True, required=False)
    ranking = StructField(
        schema.ExecutorRanking,
        required=False,
        help_text="ExecutorRanking.to_dict(): executors most anomalous first, each with its features ranked "
        "(value, mean, std, z, direction; time and data features per task), left_out with reasons, warnings.",
    )
    features = StructField(
        list[schema.ExecutorFeatureRow], required=False, help_text="One object per executor: each feature's value."
    )
    series = StructField(
        schema.TaskSeries | None,
        required=False,
        help_text="With series=1: a seeded sample of the tasks in columns (finish_ms and launch_ms since the app "
        "start, executor indexing executors, stage, failed, features by name; zero_features are all zero); null "
        "when no sample was taken (the analysis could not compute its input).",
    )


class AppExecutorAnomalyView(APIView):
    @extend_schema(
        operation_id="apps_executor_anomalies",
        summary="Which executor of this app is odd, and in what",
        description="Executors ranked by how unusual their features are (Basu et al. 2007), computed when the app "
        "was stored, with the model used (peers, or the template's recent runs as reference for apps with few "
        "executors), its warnings and the executors left out. available is false, with the reason, for MapReduce "
        "jobs, apps analyzed before the ranking existed and reports that cannot be read (analyze the app again). "
        "The app is chosen as for the app detail.",
        parameters=[
            *APP_CHOICE_PARAMETERS,
            OpenApiParameter("series", bool, description="1 adds the per-task series sample."),
        ],
        responses={**COMMON, 200: ExecutorAnomalySerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, app_id: str) -> Response:
        rows, _ = app_rows(request, app_id)
        with_series = query_flag(request.query_params.get("series"))
        return Response(ExecutorAnomalySerializer(api_answer(rows[0], with_series=with_series)).data)
