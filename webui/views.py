"""Server-rendered pages. Views parse the request, call selectors and render; they hold no queries."""

from __future__ import annotations

from datetime import timedelta
from functools import cached_property

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from analyzer import ops
from analyzer.models import AnalyzedApp
from analyzer.selectors import apps as app_selectors
from analyzer.selectors import dashboard as dashboard_selectors
from analyzer.selectors import flows as flow_selectors
from analyzer.selectors import report as report_selectors
from analyzer.selectors import sources as source_selectors
from webui import help as help_content
from webui.api.pagination import COUNT_CAP
from webui.forms import (
    NO_CLUSTER,
    USER_DEFAULT_DAYS,
    AppSearchForm,
    CompareForm,
    FlowRunForm,
    HistoryForm,
    ProblemForm,
    UserForm,
)
from webui.middleware import bearer_token_matches, site_is_open
from webui.presenters import attribution as attribution_presenter
from webui.presenters import charts
from webui.presenters import flows as flow_presenter
from webui.presenters import impact as impact_presenter
from webui.presenters import metrics as metrics_presenter
from webui.presenters import sources as sources_presenter
from webui.presenters import stages as stage_presenter
from webui.presenters.executors import executor_anomaly_panel

APPS_PER_PAGE = 25


class CappedPaginator(Paginator):
    """A Paginator that counts at most ``COUNT_CAP`` rows, as the API does (webui/api/pagination.py).

    Django's Paginator counts every match: 84-142 ms for the unfiltered search page on a million apps, against a
    few ms for ``count(*)`` of at most ``COUNT_CAP + 1`` rows. Above the cap ``capped`` is true, the page says
    "more than 1,000" and the pages stop at the cap (narrow the filters or sort to reach the rest).
    """

    @cached_property
    def _capped_count(self) -> int:
        apps: QuerySet[AnalyzedApp] = self.object_list  # type: ignore[assignment]  # app_list pages a QuerySet
        return int(apps.order_by()[: COUNT_CAP + 1].count())

    @cached_property
    def count(self) -> int:
        return min(self._capped_count, COUNT_CAP)

    @property
    def capped(self) -> bool:
        return self._capped_count > COUNT_CAP


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "webui/not_found.html", {"message": message}, status=404)


def _bad_request(request: HttpRequest, form: ProblemForm, what: str) -> HttpResponse:
    context = {"what": what, "problems": form.problems(), "form": form}
    return render(request, "webui/bad_request.html", context, status=400)


@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    summary = dashboard_selectors.dashboard_summary(now=timezone.now())
    return render(request, "webui/dashboard.html", {"summary": summary, "no_cluster": NO_CLUSTER})


@require_safe
def app_list(request: HttpRequest) -> HttpResponse:
    form = AppSearchForm(
        request.GET, clusters=app_selectors.cluster_names(), heuristics=app_selectors.heuristic_choices()
    )
    apps = app_selectors.app_search(**form.search(now=timezone.now()))
    page = CappedPaginator(apps, APPS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "page": page,
        "filtered": form.filtered(),
        "sort": form.sort(),
        "elided_pages": page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1),
    }
    return render(request, "webui/app_list.html", context)


@require_safe
def app_report(request: HttpRequest, pk: int) -> HttpResponse:
    report = report_selectors.app_report(pk=pk, stage_sort=request.GET.get("stage_sort", ""))
    if report is None:
        return _not_found(request, f"There is no analyzed app number {pk}. It may have been deleted.")
    attribution = attribution_presenter.app_attribution(report.app)
    context = {
        "report": report,
        "app": report.app,
        "attempts": report_selectors.app_attempts(app=report.app),
        "metrics": metrics_presenter.app_metrics(report.app.app_type, report.metric_values),
        "headline": impact_presenter.headline_panel(report),
        "what_if": impact_presenter.what_if_chart(report),
        "stage_charts": charts.flagged_stage_charts(report),
        "timeline": charts.executor_timeline(report),
        "attribution": attribution,
        "attribution_chart": attribution_presenter.attribution_chart(attribution),
        "executor_anomaly": executor_anomaly_panel(
            report.app, executor=request.GET.get("executor", ""), feature=request.GET.get("feature", "")
        ),
    }
    return render(request, "webui/app_report.html", context)


@require_safe
def help_index(request: HttpRequest) -> HttpResponse:
    context = {
        "catalog": help_content.heuristic_catalog(),
        "metrics": metrics_presenter.metric_help(),
        "metrics_explanation": help_content.metrics_explanation(),
        "impact": impact_presenter.help_figures(),
    }
    return render(request, "webui/help_index.html", context)


@require_safe
def help_heuristic(request: HttpRequest, code: str) -> HttpResponse:
    heuristic = help_content.heuristic_help(code)
    if heuristic is None:
        return _not_found(request, f"There is no heuristic with the code “{code}”.")
    return render(request, "webui/help_heuristic.html", {"heuristic": heuristic})


@require_safe
def attribution_versions(request: HttpRequest) -> HttpResponse:
    return render(request, "webui/attribution_versions.html", attribution_presenter.versions_page())


@require_safe
def sources(request: HttpRequest) -> HttpResponse:
    overview = source_selectors.sources_overview(now=timezone.now())
    return render(request, "webui/sources.html", {"clusters": sources_presenter.sources_page(overview)})


# Flow runs, histories, comparisons and users. Ids travel as query parameters (they hold slashes and colons).


@require_safe
def flow_execution(request: HttpRequest) -> HttpResponse:
    form = FlowRunForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form, "a flow execution")
    flow_exec_id, cluster = form.cleaned_data["flow_exec_id"], form.cleaned_data["cluster"]
    run = flow_selectors.flow_execution(flow_exec_id=flow_exec_id, cluster=cluster)
    if run is None:
        return _not_found(request, f"No analyzed app belongs to flow execution “{flow_exec_id}”.")
    context = {
        "run": run,
        "cluster": cluster,
        "codes": flow_presenter.finding_codes(run.heuristics.values()),
        "previous": flow_selectors.previous_flow_execution(run=run, cluster=cluster),
    }
    return render(request, "webui/flow_execution.html", context)


HISTORY_TITLES = {"job_def_id": "Job history", "flow_def_id": "Flow history", "template": "Template history"}


@require_safe
def history(request: HttpRequest) -> HttpResponse:
    form = HistoryForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form, "a history")
    by, data = form.by, form.cleaned_data
    cluster, limit = data["cluster"], data["limit"] or flow_selectors.HISTORY_DEFAULT_LIMIT
    if by == "flow_def_id":
        points = flow_selectors.flow_history(flow_def_id=data[by], cluster=cluster, limit=limit)
    else:
        points = flow_selectors.job_history(**{by: data[by]}, cluster=cluster, limit=limit)
    context = {
        "by": by,
        "value": data[by],
        "title": HISTORY_TITLES[by],
        "cluster": cluster,
        "limit": limit,
        "points": points,
        "latest_first": points[::-1],
        "strip": flow_presenter.severity_strip(points),
        "chart_data": charts.history_chart_data(points),
        "stage_anomalies": stage_presenter.history_section(by, data[by], cluster) if points else None,
    }
    return render(request, "webui/history.html", context)


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form, "a comparison")
    a, b, cluster = form.cleaned_data["a"], form.cleaned_data["b"], form.cleaned_data["cluster"]
    # The earlier run is always A, the baseline, so "▼ better" means better than before whichever run the
    # comparison was started from.
    comparison = flow_selectors.flow_comparison(a=a, b=b, cluster=cluster, earlier_first=True)
    if comparison is None:
        # Say which side is missing: the common mistake is one mistyped id.
        missing = a if flow_selectors.flow_execution(flow_exec_id=a, cluster=cluster) is None else b
        return _not_found(request, f"No analyzed app belongs to flow execution “{missing}”.")
    return render(request, "webui/compare.html", {"comparison": comparison, "cluster": cluster})


@require_safe
def user_page(request: HttpRequest) -> HttpResponse:
    data = request.GET.copy()
    data.setdefault("days", str(USER_DEFAULT_DAYS))  # so the period picker shows the period shown
    form = UserForm(data)
    if not form.is_valid():
        return _bad_request(request, form, "a user")
    user, days = form.cleaned_data["user"], form.cleaned_data["days"] or USER_DEFAULT_DAYS
    since = timezone.now() - timedelta(days=days)
    summary = dashboard_selectors.user_summary(user=user, since=since)
    page = Paginator(summary.apps, APPS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"user_name": user, "days": days, "form": form, "summary": summary, "page": page}
    return render(request, "webui/user.html", context)


# Operations: plain endpoints for load balancers and Prometheus, not pages.


@login_not_required  # says only "ok"/"unreachable" for the database and broker: nothing private
@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the database (and, in a Celery install, the broker) answers, else 503 naming what did not."""
    status = ops.health()
    return JsonResponse(status.as_dict(), status=200 if status.ok else 503)


@login_not_required  # checked below: a scraper has no session, it sends the scrape token
@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text exposition of what the database says now (docs/SOURCES.md, "Operating").

    Open in open mode; in token mode only to ``Authorization: Bearer <HINDSIGHT_METRICS_TOKEN>`` or a signed-in
    staff user (the counts name clusters and sources).
    """
    allowed = (
        site_is_open()
        or bearer_token_matches(request, settings.HINDSIGHT_METRICS_TOKEN)
        or (request.user.is_authenticated and request.user.is_staff)
    )
    if not allowed:
        if request.user.is_authenticated:
            return HttpResponse(
                "Forbidden: /metrics needs a staff user or the scrape token.\n", status=403, content_type="text/plain"
            )
        response = HttpResponse(
            "Unauthorized: send Authorization: Bearer <scrape token>.\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ops.HindsightCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
