"""API views: parse the query, call selectors, serialize. Reads, and two writes: retrying failed apps (staff) and
on-demand analysis (a token or a staff session), which only record claims and send the task by name."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import BasePermission, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analyzer.ingestion import ondemand
from analyzer.ingestion.claims import claims_retry, cluster_failed_claims
from analyzer.models import AnalyzedApp, Cluster, Severity
from analyzer.selectors import apps as app_selectors
from analyzer.selectors import flows as flow_selectors
from analyzer.selectors import gate as gate_selectors
from analyzer.selectors import report as report_selectors
from analyzer.selectors import sources as source_selectors
from heuristics.severity import is_four_levels
from webui.api import serializers as api
from webui.api.errors import BAD_REQUEST, COMMON, NOT_FOUND, ErrorSerializer, error_body
from webui.api.filters import AppFilter
from webui.api.pagination import CappedLimitOffsetPagination
from webui.api.stages import (
    STAGE_ANOMALIES_PARAMETER,
    HistoryWithStageAnomaliesSerializer,
    history_stage_anomalies,
    wants_stage_anomalies,
)
from webui.presenters import attribution as attribution_presenter
from webui.presenters import sources as sources_presenter

logger = logging.getLogger(__name__)


class AppListView(generics.ListAPIView[AnalyzedApp]):
    """Analyzed apps matching every given filter, most recently ended first unless ``ordering`` says otherwise."""

    serializer_class = api.AppSummarySerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = AppFilter
    pagination_class = CappedLimitOffsetPagination

    def get_queryset(self) -> QuerySet[AnalyzedApp]:
        # The list never shows the big JSON columns; leave them in the database.
        light = AnalyzedApp.objects.select_related("cluster")
        return light.defer("metrics", "parse_stats", "spark_properties", "warnings", "yarn", "headline", "what_if")

    @extend_schema(
        operation_id="apps_list", responses={**COMMON, 200: api.AppSummarySerializer(many=True), 400: BAD_REQUEST}
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


def _app_choice(request: Request) -> tuple[str, str]:
    return request.query_params.get("attempt", "").strip(), request.query_params.get("cluster", "").strip()


def _app_not_found(request: Request, app_id: str) -> exceptions.NotFound:
    chosen = "".join(f", {k} {v!r}" for k, v in zip(("attempt", "cluster"), _app_choice(request), strict=True) if v)
    return exceptions.NotFound(f"No analyzed app {app_id[:300]!r}{chosen[:300]}. It may not be analyzed yet.")


# attempt= and cluster= choose among the stored rows of one app id (app_rows), on every apps/<id> endpoint.
APP_CHOICE_PARAMETERS = [
    OpenApiParameter("attempt", str, description="An attempt id (e.g. 1, 2)."),
    OpenApiParameter("cluster", str, description="A cluster name."),
]


def app_rows(request: Request, app_id: str) -> tuple[list[AnalyzedApp], bool]:
    """The stored rows of ``app_id`` as ``attempt=`` and ``cluster=`` narrow them (the first is the one shown),
    and whether they were narrowed; 404 when there is none."""
    attempt, cluster = _app_choice(request)
    # PostgreSQL text cannot hold NUL, so no stored app has one: such a request matches nothing.
    nul = any("\x00" in value for value in (app_id, attempt, cluster))
    rows = [] if nul else app_selectors.app_attempts_by_id(app_id=app_id, attempt=attempt, cluster=cluster)
    if not rows:
        raise _app_not_found(request, app_id)
    return rows, bool(attempt or cluster)


class AppDetailView(APIView):
    @extend_schema(
        operation_id="apps_retrieve",
        summary="One analyzed app: metrics, findings with details, stages, executors, YARN view and job info",
        description="The app id may carry an application_ or job_ prefix, or none. When several attempts or "
        "sources hold the id, the latest ended one is shown and every one is listed under attempts; "
        "attempt= and cluster= choose.",
        parameters=APP_CHOICE_PARAMETERS,
        responses={**COMMON, 200: api.AppDetailSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, app_id: str) -> Response:
        rows, narrowed = app_rows(request, app_id)
        report = report_selectors.app_report(pk=rows[0].pk)
        if report is None:  # deleted since it was listed
            raise _app_not_found(request, app_id)
        attempts = app_selectors.app_attempts_by_id(app_id=app_id) if narrowed else rows
        context = {"request": request, "executors": report.executors, "attempts": attempts}
        return Response(api.AppDetailSerializer(report.app, context=context).data)


class AppAttributionView(APIView):
    @extend_schema(
        operation_id="apps_attribution",
        summary="Why this run was slower than its recurring job's usual runs",
        description="Ranked causes with their effect in seconds, this run's measured values against the usual "
        "ones, a confidence, and the usual runs compared with, from the serving attribution model (GET "
        "/attribution/ in the web UI lists the versions). available is false, with the reason, when there is no "
        "model yet, the app is not a recurring job, or the explanation failed (warning true). The app is chosen "
        "as for the app detail.",
        parameters=APP_CHOICE_PARAMETERS,
        responses={**COMMON, 200: api.AttributionSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, app_id: str) -> Response:
        rows, _ = app_rows(request, app_id)
        data = attribution_presenter.app_attribution(rows[0])
        return Response(api.AttributionSerializer(data, context={"request": request}).data)


def _builtin(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _builtin(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_builtin(v) for v in value]
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


class HeuristicCatalogView(APIView):
    @extend_schema(
        operation_id="heuristics_list",
        summary="Every configured heuristic with its current thresholds and help text",
        responses={**COMMON, 200: api.CatalogSerializer},
    )
    def get(self, request: Request) -> Response:
        try:
            from heuristics import load_suite  # late, as the help pages do: a broken suite must not break the API

            suite = load_suite(settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE)
        except Exception as exc:  # a bad override file is a configuration error to report, not a crash
            logger.exception("loading the heuristic suite failed")
            return Response({"heuristics": [], "error": f"The heuristic configuration could not be loaded: {exc}"})
        entries = []
        for heuristic in suite.heuristics:
            try:
                config = dict(heuristic.config_as_dict() or {})
            except Exception:
                logger.exception("config_as_dict failed for heuristic %s", heuristic.code)
                config = {}
            help_text = str(heuristic.help_text or "")
            entries.append(
                {
                    "code": heuristic.code,
                    "name": heuristic.name,
                    "app_types": [str(getattr(t, "value", t)) for t in heuristic.app_types],
                    "summary": help_text.strip().split("\n\n", 1)[0].replace("\n", " ").strip(),
                    "help_text": help_text,
                    "help_url": request.build_absolute_uri(reverse("webui:help_heuristic", args=[heuristic.code])),
                    "thresholds": [
                        {"setting": str(k), "levels": _builtin(v)} for k, v in config.items() if is_four_levels(v)
                    ],
                    "settings": {str(k): _builtin(v) for k, v in config.items() if not is_four_levels(v)},
                }
            )
        return Response({"heuristics": entries, "error": None})


class ClusterListView(APIView):
    @extend_schema(
        operation_id="clusters_list",
        summary="Clusters with each source's polling status (secrets masked)",
        responses={**COMMON, 200: api.ClusterSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        clusters = []
        for cluster in source_selectors.sources_overview(now=timezone.now()):
            sources = []
            for status in cluster.sources:
                source = status.source
                sources.append(
                    {
                        "id": source.pk,
                        "backend": source.backend,
                        "backend_label": status.backend_label,
                        "enabled": source.enabled,
                        "state": sources_presenter.source_state(status),
                        "params": dict(sources_presenter.status_params_shown(status)),
                        "poll_interval_s": source.poll_interval_s,
                        "last_poll_at": source.last_poll_at,
                        "last_success_at": source.last_success_at,
                        "checkpoint": status.checkpoint,
                        "checkpoint_lag_s": status.checkpoint_lag_s,
                        "behind": status.behind,
                        "oldest_behind": status.oldest_behind,
                        "failed": status.failed,
                        "last_error": status.last_error,
                        "recent_failures": [
                            {
                                "app_id": f.app_id,
                                "attempt_id": f.attempt_id,
                                "finished_at": f.finished_at,
                                "tries": f.tries,
                                "error": f.error,
                            }
                            for f in status.recent_failures
                        ],
                    }
                )
            clusters.append({"name": cluster.name, "sources": sources})
        return Response(api.ClusterSerializer(clusters, many=True).data)


class SeverityParam(serializers.CharField):
    def to_internal_value(self, data: Any) -> int:  # type: ignore[override]
        level = gate_selectors.parse_severity(str(super().to_internal_value(data)))
        if level is None:
            names = ", ".join(level.name for level in Severity)
            raise serializers.ValidationError(f"Unknown severity: use one of {names} or 0-4.")
        return level


def _heuristic_codes(value: str) -> list[str]:
    codes = [code.strip() for code in value.split(",") if code.strip()]
    known = gate_selectors.heuristic_codes()
    unknown = [code for code in codes if known is not None and code not in known]
    if unknown:
        raise serializers.ValidationError(f"Unknown heuristic code(s): {', '.join(unknown)[:300]}.")
    return codes


class GateQuerySerializer(serializers.Serializer[Any]):
    app_id = serializers.CharField(required=False, max_length=255, help_text="An app id (either prefix or none).")
    job_def_id = serializers.CharField(required=False, max_length=255, help_text="The latest run of this job.")
    flow_def_id = serializers.CharField(
        required=False, max_length=255, help_text="Every app of this flow's latest run (the run that ended last)."
    )
    template = serializers.CharField(required=False, max_length=255, help_text="The latest run of this template.")
    cluster = serializers.CharField(required=False, max_length=64, help_text="Only this cluster's apps.")
    max_severity = SeverityParam(
        required=False, help_text="The highest severity that passes (NONE..CRITICAL or 0-4); default MODERATE."
    )
    heuristics = serializers.CharField(
        required=False, max_length=4000, help_text="Comma-separated heuristic codes to judge (default: all)."
    )
    allow_failed = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: do not fail an app whose status is FAILED (judge its findings only). Default false.",
    )

    TARGETS = ("app_id", "job_def_id", "flow_def_id", "template")

    def validate_heuristics(self, value: str) -> list[str]:
        return _heuristic_codes(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in self.TARGETS if attrs.get(name, "").strip()]
        if len(given) != 1:
            raise serializers.ValidationError(
                {given[1] if given else "app_id": "Give exactly one of app_id, job_def_id, flow_def_id, template."}
            )
        return attrs


def _gate_body(verdict: gate_selectors.GateVerdict, request: Request) -> dict[str, Any]:
    context = {"request": request}
    return {
        "verdict": "pass" if verdict.passed else "fail",
        "severity": Severity(verdict.severity).name,
        "max_severity": Severity(verdict.max_severity).name,
        "reason": verdict.reason,
        "flow_exec_id": verdict.target.flow_exec_id or None,
        "app": api.AppSummarySerializer(verdict.app, context=context).data,
        "apps": api.AppSummarySerializer(verdict.target.apps, many=True, context=context).data,
        "failed": api.GateFindingSerializer(verdict.failed, many=True).data,
    }


class GateView(APIView):
    @extend_schema(
        operation_id="gate_retrieve",
        summary="CI gate: pass when no judged finding is above max_severity and no judged app FAILED",
        description="app_id judges that app's latest attempt; job_def_id and template the latest run of that job "
        "(one app); flow_def_id every app of the flow's latest run (the flow execution whose last app ended "
        "last). severity is the worst judged finding; failed lists the findings above max_severity, each naming "
        "its app; apps lists every judged app. An app whose status is FAILED fails the gate, and reason says why "
        '("the app FAILED: <class>: <message>", its failure\'s exception), unless allow_failed=true.',
        parameters=[GateQuerySerializer],
        responses={
            **COMMON,
            200: api.GateSerializer,
            400: BAD_REQUEST,
            404: OpenApiResponse(
                ErrorSerializer,
                description="No such app is analyzed yet (code not_analyzed), or an analyze request found that the "
                "source has no such app (code not_found).",
            ),
        },
    )
    def get(self, request: Request) -> Response:
        query = GateQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        targets = {name: params.get(name, "").strip() for name in GateQuerySerializer.TARGETS}
        target = gate_selectors.gate_target(**targets, cluster=params.get("cluster", "").strip())
        if target is None:
            field, value = next((k, v) for k, v in targets.items() if v)
            cluster = params.get("cluster", "").strip()
            missing = ondemand.not_found_reason(app_id=value, cluster=cluster) if field == "app_id" else None
            if missing:  # an analyze request of an app its source does not have
                return Response(error_body("not_found", f"No such app in the source: {missing}"[:2000], field), 404)
            what = "flow run" if field == "flow_def_id" else "app"
            message = f"No analyzed {what} matches {field}={value!r}: it is not analyzed yet, or the value is wrong."
            return Response(error_body("not_analyzed", message, field), status=404)
        verdict = gate_selectors.gate_verdict(
            target=target,
            max_severity=params.get("max_severity", Severity.MODERATE.value),
            heuristics=params.get("heuristics", []),
            allow_failed=params.get("allow_failed", False),
        )
        return Response(_gate_body(verdict, request))


class AnalyzeBodySerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField(max_length=64, help_text="The cluster's name.")
    app_id = serializers.CharField(
        max_length=255, help_text="A Spark app id, a YARN application id or a MapReduce job id."
    )
    attempt_id = serializers.CharField(
        required=False, allow_blank=True, max_length=64, default="", help_text="The attempt; default the latest."
    )
    wait_s = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=ondemand.MAX_WAIT_S,
        default=0,
        help_text="Seconds to wait for the verdict (0-300; default 0, answer at once). A waiting request holds "
        "one server worker, so a caller who is not staff waits at most HINDSIGHT_ANALYZE_MAX_WAIT_S (default 30): "
        "a longer wait_s is clamped to it and the answer's request.wait_capped says so.",
    )
    max_severity = SeverityParam(
        required=False, help_text="The highest severity that passes (NONE..CRITICAL or 0-4); default MODERATE."
    )
    heuristics = serializers.CharField(
        required=False, max_length=4000, help_text="Comma-separated heuristic codes to judge (default: all)."
    )
    allow_failed = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: do not fail an app whose status is FAILED (judge its findings only), as the gate's "
        "allow_failed. Default false.",
    )

    def validate_heuristics(self, value: str) -> list[str]:
        return _heuristic_codes(value)


class TokenOrStaff(BasePermission):
    """Writes: a DRF token (``Authorization: Token <key>``, any user holding one) or a signed-in staff session."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return isinstance(request.successful_authenticator, TokenAuthentication) or bool(user.is_staff)


class AnalyzeView(APIView):
    """Fetch and analyze one app of a cluster now (``analyzer.ingestion.ondemand``), optionally awaiting the verdict."""

    permission_classes = [TokenOrStaff]

    @extend_schema(
        operation_id="analyze_create",
        summary="Fetch and analyze one app of a cluster now (again if it was analyzed), optionally waiting for the "
        "gate verdict; a token or a staff session",
        description="The app is recorded for the cluster as due now (re-armed with a fresh fetch budget when it "
        "was recorded or analyzed before) and a worker fetches it from the cluster's Spark History Server, "
        "event-log directory (the complete log of that id) or, for MapReduce, JobHistory Server. Without wait_s "
        "(or when the wait runs out) the answer is 202 with the gate URL to poll; when the analysis is stored "
        "within wait_s it is 200 with the gate verdict on the app. The server checks every half second while "
        "waiting, holding one server worker for up to wait_s.\n\n"
        "Limits (a wait holds a server worker): a caller who is not staff waits at most "
        "HINDSIGHT_ANALYZE_MAX_WAIT_S seconds (default 30; staff 300); a longer wait_s is clamped, not refused, "
        "and request.wait_s / request.max_wait_s / request.wait_capped say so. One user may have "
        "HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER requests waiting at once (default 2) and all users together "
        "HINDSIGHT_ANALYZE_MAX_WAITING (default half the web workers); beyond either, a request with wait_s is "
        "429 (code throttled, field wait_s) with Retry-After, and nothing is recorded: ask without wait_s and "
        "poll. An app no source listed before is recorded as unverified (request.listed false); when the source "
        "has no such app the answer (or the gate, later) is 404 with code not_found and the claim is counted "
        "nowhere. One user may have HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER such requests still being looked "
        "up (default 20); beyond, 429 (code throttled, field app_id).",
        request=AnalyzeBodySerializer,
        responses={
            **COMMON,
            200: api.AnalyzedVerdictSerializer,
            202: api.AnalyzeQueuedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="The body is invalid."),
            404: OpenApiResponse(
                ErrorSerializer,
                description="No such cluster (code not_found, field cluster), or within the wait the source was "
                "found to have no such app (code not_found, field app_id).",
            ),
            409: OpenApiResponse(ErrorSerializer, description="No source of the cluster can fetch an app by id."),
            422: OpenApiResponse(ErrorSerializer, description="Within the wait, the app could not be fetched."),
            429: OpenApiResponse(
                ErrorSerializer,
                description="Throttled (code throttled, with Retry-After): too many requests, too many waiting "
                "requests of the caller or of everyone (field wait_s), or too many of the caller's unlisted apps "
                "still being looked up (field app_id). Nothing is recorded.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        body = AnalyzeBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        params = body.validated_data
        cap = ondemand.wait_cap_s(staff=bool(request.user.is_staff))
        wait_s = min(params["wait_s"], cap)
        try:
            if not wait_s:
                return self._request(request, params, wait_s=0, cap=cap)
            # The slots are taken before anything is recorded: a refused wait leaves no trace to clean up.
            with ondemand.waiting(str(request.user.pk), wait_s):
                return self._request(request, params, wait_s=wait_s, cap=cap)
        except ondemand.TooMany as error:  # the API's 429, with the field at fault
            refusal = error_body(error.code, error.message, error.field)
            return Response(refusal, status=429, headers={"Retry-After": str(error.retry_after_s)})

    def _request(self, request: Request, params: dict[str, Any], *, wait_s: int, cap: int) -> Response:
        try:
            requested = ondemand.request_analysis(
                cluster=params["cluster"],
                app_id=params["app_id"],
                attempt_id=params["attempt_id"],
                requested_by=str(request.user),
            )
        except ondemand.TooMany:
            raise
        except ondemand.OnDemandError as error:
            status = 404 if isinstance(error, ondemand.UnknownCluster) else 409
            return Response(error_body(error.code, error.message, error.field), status=status)
        ondemand.send_analysis(requested)
        progress = ondemand.wait_for_analysis(requested, wait_s) if wait_s else ondemand.progress(requested.claim_id)
        echo = {
            "cluster": requested.cluster,
            "app_id": requested.app_id,
            "attempt_id": requested.attempt_id,
            "source": requested.source,
            "claim_state": progress.state,
            "rearmed": requested.rearmed,
            "listed": progress.listed,
            "requested_at": requested.requested_at,
            "last_error": progress.last_error,
            "wait_s": wait_s,
            "max_wait_s": cap,
            "wait_capped": params["wait_s"] > cap,
        }
        shown = api.AnalyzeRequestEchoSerializer(echo).data
        max_severity = params.get("max_severity", Severity.MODERATE.value)
        target = (
            gate_selectors.app_gate_target(pk=progress.analyzed_pk) if progress.done and progress.analyzed_pk else None
        )
        if target is not None:
            verdict = gate_selectors.gate_verdict(
                target=target,
                max_severity=max_severity,
                heuristics=params.get("heuristics", []),
                allow_failed=params.get("allow_failed", False),
            )
            return Response({"status": "analyzed", "request": shown, **_gate_body(verdict, request)})
        if progress.not_found:
            message = f"{requested.source} has no app {requested.app_id[:300]}: {progress.last_error}"
            return Response(error_body("not_found", message[:2000], "app_id"), status=404)
        if progress.failed:
            message = f"{requested.app_id[:300]} could not be fetched from {requested.source}: {progress.last_error}"
            return Response(error_body("fetch_failed", message[:2000], "app_id"), status=422)
        query = {"app_id": requested.app_id, "cluster": requested.cluster}
        if "max_severity" in params:
            query["max_severity"] = Severity(max_severity).name
        if params.get("heuristics"):
            query["heuristics"] = ",".join(params["heuristics"])
        if params.get("allow_failed"):
            query["allow_failed"] = "true"
        poll = request.build_absolute_uri(f"{reverse('api:gate')}?{urlencode(query)}")
        return Response({"status": "queued", "request": shown, "poll": poll}, status=202)


def unknown_endpoint(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any other path under /api/v1/: the API's 404 body, not the web UI's HTML page."""
    body = error_body("not_found", f"No API endpoint at {request.path[:300]!r}; see /api/schema/ for the endpoints.")
    return JsonResponse(body, status=404)


class RetryRequestSerializer(serializers.Serializer[Any]):
    app_ids = serializers.ListField(
        child=serializers.CharField(max_length=255), required=False, default=list, max_length=10_000
    )


class RetryResultSerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField()
    retried = serializers.IntegerField(help_text="Apps that failed to fetch, now due again with a fresh budget.")


class ClusterRetryView(APIView):
    """The one write of the API: staff only, whatever HINDSIGHT_API_AUTH says (a token or a signed-in session)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="clusters_retry",
        summary="Analyze again a cluster's apps that failed to fetch (all, or the app ids given); staff only",
        request=RetryRequestSerializer,
        responses={**COMMON, 200: RetryResultSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    )
    def post(self, request: Request, name: str) -> Response:
        body = RetryRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not Cluster.objects.filter(name=name).exists():
            raise exceptions.NotFound(f"no cluster named {name!r}")
        retried = claims_retry(cluster_failed_claims(name, body.validated_data["app_ids"]))
        logger.info("%s asked to retry %d failed app(s) of %s", request.user, retried, name)
        return Response({"cluster": name, "retried": retried})


# Flow executions, history and compare: ids are data (an Airflow run id holds a slash, an Azkaban one a URL), so
# they travel as query parameters, never in the path.


class FlowExecutionQuerySerializer(serializers.Serializer[Any]):
    flow_exec_id = serializers.CharField(max_length=255, help_text="The flow execution id, exactly as stored.")
    cluster = serializers.CharField(required=False, max_length=64, help_text="Only this cluster's apps.")


class FlowExecutionView(APIView):
    @extend_schema(
        operation_id="flow_executions_retrieve",
        summary="Every app of one flow execution by start time, with the run's totals and its flow definition",
        parameters=[FlowExecutionQuerySerializer],
        responses={**COMMON, 200: api.FlowRunSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        query = FlowExecutionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        flow_exec_id = query.validated_data["flow_exec_id"]
        run = flow_selectors.flow_execution(flow_exec_id=flow_exec_id, cluster=query.validated_data.get("cluster", ""))
        if run is None:
            message = f"No analyzed app belongs to flow execution {flow_exec_id!r}."
            return Response(error_body("not_found", message, "flow_exec_id"), status=404)
        return Response(api.FlowRunSerializer(run, context={"request": request}).data)


class HistoryQuerySerializer(serializers.Serializer[Any]):
    job_def_id = serializers.CharField(required=False, max_length=255, help_text="Runs of this job definition.")
    flow_def_id = serializers.CharField(
        required=False, max_length=255, help_text="Executions of this flow definition (one point per execution)."
    )
    template = serializers.CharField(required=False, max_length=255, help_text="Runs of this job template.")
    cluster = serializers.CharField(required=False, max_length=64, help_text="Only this cluster's apps.")
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=flow_selectors.HISTORY_MAX_LIMIT,
        default=flow_selectors.HISTORY_DEFAULT_LIMIT,
        help_text=f"How many of the latest runs (default {flow_selectors.HISTORY_DEFAULT_LIMIT}).",
    )

    KEYS = ("job_def_id", "flow_def_id", "template")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in self.KEYS if attrs.get(name, "")]
        if len(given) != 1:
            raise serializers.ValidationError(
                {given[1] if given else "job_def_id": "Give exactly one of job_def_id, flow_def_id, template."}
            )
        return attrs


class HistoryView(APIView):
    @extend_schema(
        operation_id="history_retrieve",
        summary="The last runs of a job definition, template or flow definition, oldest first",
        description="Each point has its end time, runtime, used and wasted GB-hours, score, severity and each "
        "heuristic's severity. For a flow definition a point is one flow execution: runtime_ms is its wall span "
        "(first start to last end), app_runtime_ms, resources and score are summed over its apps, and severities "
        "are the worst of its apps. An empty list when nothing ran. With stage_anomalies=true the answer also "
        "holds stage_anomalies, the stored stage anomaly localization of the runs' templates (as GET "
        "/api/v1/stage-anomalies), at the cost of up to three more queries.",
        parameters=[HistoryQuerySerializer, STAGE_ANOMALIES_PARAMETER],
        responses={**COMMON, 200: HistoryWithStageAnomaliesSerializer, 400: BAD_REQUEST},
    )
    def get(self, request: Request) -> Response:
        query = HistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        by = next(name for name in HistoryQuerySerializer.KEYS if params.get(name, ""))
        cluster, limit = params.get("cluster", ""), params["limit"]
        if by == "flow_def_id":
            points = flow_selectors.flow_history(flow_def_id=params[by], cluster=cluster, limit=limit)
        else:
            points = flow_selectors.job_history(**{by: params[by]}, cluster=cluster, limit=limit)
        body = {"by": by, "value": params[by], "cluster": cluster, "limit": limit, "points": points}
        if wants_stage_anomalies(request):
            body["stage_anomalies"] = history_stage_anomalies(by, params[by], cluster) if points else []
        return Response(HistoryWithStageAnomaliesSerializer(body, context={"request": request}).data)


class CompareQuerySerializer(serializers.Serializer[Any]):
    a = serializers.CharField(max_length=255, help_text="A flow execution id (the baseline).")
    b = serializers.CharField(max_length=255, help_text="Another flow execution id (compared with a).")
    cluster = serializers.CharField(required=False, max_length=64, help_text="Only this cluster's apps.")


class CompareView(APIView):
    @extend_schema(
        operation_id="compare_retrieve",
        summary="Two flow executions side by side, apps matched by job definition",
        description="Apps of one job definition pair up in start order; the rest are listed on their own side "
        "(a or b null). Differences are b - a: runtime, resources, score, severity, and the heuristics whose "
        "severity changed.",
        parameters=[CompareQuerySerializer],
        responses={
            **COMMON,
            200: api.ComparisonSerializer,
            400: BAD_REQUEST,
            404: OpenApiResponse(ErrorSerializer, description="A flow execution has no analyzed app."),
        },
    )
    def get(self, request: Request) -> Response:
        query = CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        a, b, cluster = query.validated_data["a"], query.validated_data["b"], query.validated_data.get("cluster", "")
        comparison = flow_selectors.flow_comparison(a=a, b=b, cluster=cluster)
        if comparison is None:
            # Say which side is missing: the common mistake is one mistyped id.
            missing = "a" if flow_selectors.flow_execution(flow_exec_id=a, cluster=cluster) is None else "b"
            value = a if missing == "a" else b
            message = f"No analyzed app belongs to flow execution {value!r} ({missing})."
            return Response(error_body("not_found", message, missing), status=404)
        context = {"request": request, "heuristics": comparison.heuristics}
        return Response(
            {
                "a": api.FlowRunSummarySerializer(comparison.a).data,
                "b": api.FlowRunSummarySerializer(comparison.b).data,
                "difference": comparison.difference,
                "jobs": api.ComparedJobSerializer(comparison.jobs, many=True, context=context).data,
            }
        )
