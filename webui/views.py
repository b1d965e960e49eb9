"""Server-rendered pages. Views parse the request, call selectors and render; they hold no queries."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from analyzer import ops, selectors
from webui import help as help_content
from webui.forms import ANALYZED_WINDOWS, AppSearchForm

APPS_PER_PAGE = 25


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "webui/not_found.html", {"message": message}, status=404)


@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    summary = selectors.dashboard_summary(now=timezone.now())
    return render(request, "webui/dashboard.html", {"summary": summary})


@require_safe
def app_list(request: HttpRequest) -> HttpResponse:
    form = AppSearchForm(request.GET)
    filters = form.valid_filters()
    window = ANALYZED_WINDOWS.get(filters.pop("analyzed", ""))
    apps = selectors.app_search(
        query=filters.get("q", ""),
        app_id=filters.get("app_id", ""),
        user=filters.get("user", ""),
        name=filters.get("name", ""),
        min_severity=filters.get("min_severity"),
        severity=filters.get("severity"),
        analyzed_since=timezone.now() - window if window else None,
    )
    page = Paginator(apps, APPS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "page": page,
        "filtered": bool(filters) or window is not None,
        "elided_pages": page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1),
    }
    return render(request, "webui/app_list.html", context)


@require_safe
def app_report(request: HttpRequest, pk: int) -> HttpResponse:
    report = selectors.app_report(pk=pk, stage_sort=request.GET.get("stage_sort", ""))
    if report is None:
        return _not_found(request, f"There is no analyzed app number {pk}. It may have been deleted.")
    attempts = selectors.app_attempts(app=report.app)
    return render(request, "webui/app_report.html", {"report": report, "app": report.app, "attempts": attempts})


@require_safe
def help_index(request: HttpRequest) -> HttpResponse:
    context = {
        "catalog": help_content.heuristic_catalog(),
        "metrics": selectors.metric_help(),
        "metrics_explanation": help_content.metrics_explanation(),
    }
    return render(request, "webui/help_index.html", context)


@require_safe
def help_heuristic(request: HttpRequest, code: str) -> HttpResponse:
    heuristic = help_content.heuristic_help(code)
    if heuristic is None:
        return _not_found(request, f"There is no heuristic with the code “{code}”.")
    return render(request, "webui/help_heuristic.html", {"heuristic": heuristic})


@require_safe
def sources(request: HttpRequest) -> HttpResponse:
    overview = selectors.sources_overview(now=timezone.now())
    return render(request, "webui/sources.html", {"clusters": overview})


# Operations: plain endpoints for load balancers and Prometheus, not pages.


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the database (and, in a Celery install, the broker) answers, else 503 naming what did not."""
    status = ops.health()
    return JsonResponse(status.as_dict(), status=200 if status.ok else 503)


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text exposition of what the database says now (docs/SOURCES.md, "Operating")."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ops.HindsightCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
