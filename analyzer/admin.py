"""Admin: browse and delete stored analyses. Everything is read-only: results come from the analyzer only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, HeuristicResult, StageSummary
from analyzer.services import app_delete


class ReadOnlyMixin:
    """No adding or editing: a stored analysis changes only by analyzing the app again."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class HeuristicResultInline(ReadOnlyMixin, admin.TabularInline):
    model = HeuristicResult
    fields = ("position", "code", "name", "severity", "score", "advice")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(AnalyzedApp)
class AnalyzedAppAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "app_id",
        "attempt_id",
        "name",
        "user",
        "status",
        "severity",
        "score",
        "end_time",
        "used_gb_hours",
        "wasted_gb_hours",
    )
    list_filter = ("severity", "status", "partial", "app_type")
    search_fields = ("app_id", "user", "name")
    date_hierarchy = "end_time"
    inlines = (HeuristicResultInline,)
    list_per_page = 50

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, set[str], Any]:
        # Findings and summaries go with their app: permission to delete the app is enough.
        deleted, counts, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request: HttpRequest, obj: AnalyzedApp) -> None:
        app_delete(app=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AnalyzedApp]) -> None:
        for app in queryset:
            app_delete(app=app)


class HeuristicDetailInline(ReadOnlyMixin, admin.TabularInline):
    model = HeuristicDetail
    fields = ("position", "name", "value")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(HeuristicResult)
class HeuristicResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("code", "app", "severity", "score")
    list_filter = ("code", "severity")
    search_fields = ("app__app_id", "app__user", "app__name", "code")
    list_select_related = ("app",)
    inlines = (HeuristicDetailInline,)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # results go with their app


@admin.register(StageSummary)
class StageSummaryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("app", "stage_id", "attempt_id", "name", "status", "num_tasks", "num_failed_tasks", "duration_ms")
    list_filter = ("status",)
    search_fields = ("app__app_id", "app__user", "app__name")
    list_select_related = ("app",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ExecutorSummary)
class ExecutorSummaryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("app", "executor_id", "host", "cores", "total_tasks", "failed_tasks", "total_duration_ms")
    search_fields = ("app__app_id", "app__user", "app__name", "executor_id", "host")
    list_select_related = ("app",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
