"""Admin: browse and delete stored analyses (read-only: results come from the analyzer only); manage clusters.

Sources are edited through ``analyzer.ingestion.sources.source_spec``, like the command line and the sources file. Their
secrets are write-only here: never listed, never echoed in a form, kept when the field is left blank. App claims
(what polling listed, analyzed or gave up on) are read-only, with one action: retry the selected apps.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from analyzer.ingestion.sources import SourceConfigError, SourceSpec, check_address, mask_secrets, source_spec
from analyzer.models import (
    AnalyzedApp,
    AppClaim,
    Cluster,
    ExecutorSummary,
    HeuristicDetail,
    HeuristicResult,
    Source,
    StageSummary,
)
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


class SourceAdminForm(forms.ModelForm):
    """A source's parameters, validated by its backend; secrets only ever written, never shown."""

    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Basic authentication password. Left blank, the stored one is kept.",
    )
    token = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Bearer token. Left blank, the stored one is kept.",
    )
    clear_secrets = forms.BooleanField(required=False, help_text="Forget the stored password and token.")

    class Meta:
        model = Source
        fields = ("backend", "params", "enabled", "poll_interval_s", "safety_margin_s")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        backend = cleaned.get("backend")
        params = cleaned.get("params")
        if not backend or self.has_error("params"):
            return cleaned
        if not isinstance(params, dict):
            self.add_error("params", "Expected a JSON object of parameter names and values.")
            return cleaned
        stored = {} if cleaned.get("clear_secrets") else dict(self.instance.secrets or {})
        typed = {name: cleaned[name] for name in ("password", "token") if cleaned.get(name)}
        try:
            # A secret typed now wins over one written into the params, which wins over the stored one.
            self.spec: SourceSpec = source_spec(backend, {**stored, **params, **typed})
        except SourceConfigError as error:
            raise forms.ValidationError(str(error)) from None
        # The unique constraint covers params_key, which is not a form field: Django's own check skips it.
        same = Source.objects.filter(cluster_id=self.instance.cluster_id, backend=backend, params_key=self.spec.key)
        if self.instance.cluster_id is not None and same.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError("This cluster already has this source.")
        return cleaned

    def save(self, commit: bool = True) -> Source:
        source = super().save(commit=False)
        source.params, source.secrets, source.params_key = self.spec.params, self.spec.secrets, self.spec.key
        if commit:
            source.save()
        return source


class SourceInline(admin.StackedInline):
    model = Source
    form = SourceAdminForm
    extra = 0
    fields = (
        "backend",
        "params",
        "password",
        "token",
        "clear_secrets",
        "enabled",
        "poll_interval_s",
        "safety_margin_s",
        "checkpoint_ms",
        "last_poll_at",
        "last_success_at",
        "last_error",
    )
    readonly_fields = ("checkpoint_ms", "last_poll_at", "last_success_at", "last_error")


class ClusterAdminForm(forms.ModelForm):
    """A cluster; its JobHistory address checked like on the command line (short host names are fine)."""

    class Meta:
        model = Cluster
        fields = ("name", "jobhistory_url")

    def clean_jobhistory_url(self) -> str:
        url = str(self.cleaned_data.get("jobhistory_url") or "").rstrip("/")
        if url:
            try:
                check_address("jobhistory", url)
            except SourceConfigError as error:
                raise forms.ValidationError(str(error)) from None
        return url


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterAdminForm
    list_display = ("name", "jobhistory_url", "source_count", "updated_at")
    search_fields = ("name",)
    inlines = (SourceInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Cluster]:
        return super().get_queryset(request).prefetch_related("sources")

    @admin.display(description="sources")
    def source_count(self, cluster: Cluster) -> int:
        return len(cluster.sources.all())


def _claim_secrets(claim: AppClaim) -> list[str]:
    secrets = claim.source.secrets if claim.source is not None else {}
    return [str(value) for value in secrets.values()] if isinstance(secrets, dict) else []


@admin.register(AppClaim)
class AppClaimAdmin(admin.ModelAdmin):
    """What polling listed: read-only, since only pollers write claims; failed or waiting apps can be retried."""

    list_display = (
        "app_id",
        "attempt_id",
        "cluster",
        "source_label",
        "state",
        "finished",
        "tries",
        "next_try_at",
        "finished_at",
        "error_excerpt",
    )
    list_filter = ("state", "cluster", "source")
    search_fields = ("app_id",)
    list_select_related = ("cluster", "source", "source__cluster")
    show_full_result_count = False  # no second COUNT(*) over millions of claims on every filtered page
    list_per_page = 50
    actions = ("retry_selected",)
    fields = (
        "cluster",
        "app_id",
        "attempt_id",
        "state",
        "source_label",
        "finished",
        "tries",
        "next_try_at",
        "created_at",
        "claimed_at",
        "claimed_by",
        "claimed_host",
        "claimed_pid",
        "finished_at",
        "analyzed_app",
        "listing",
        "error",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a deleted claim would let a later listing analyze the app again: retry instead

    @admin.display(description="source", ordering="source__backend")
    def source_label(self, claim: AppClaim) -> str:
        # The cluster and the backend's name only: a source's parameters may hold addresses, never shown in lists.
        return claim.source.get_backend_display() if claim.source is not None else "(removed)"

    @admin.display(description="app finished", ordering="finished_ms")
    def finished(self, claim: AppClaim) -> dt.datetime | None:
        if claim.finished_ms is None:
            return None
        try:
            return dt.datetime.fromtimestamp(claim.finished_ms / 1000, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None

    @admin.display(description="last error")
    def error_excerpt(self, claim: AppClaim) -> str:
        text = mask_secrets(claim.last_error, _claim_secrets(claim))
        return text if len(text) <= 120 else f"{text[:119]}…"

    @admin.display(description="last error")
    def error(self, claim: AppClaim) -> str:
        return mask_secrets(claim.last_error, _claim_secrets(claim)) or "-"

    @admin.display(description="listing")
    def listing(self, claim: AppClaim) -> str:
        """What the source's listing said of the app, with any secret or ``user:pass@`` masked."""
        text = json.dumps(claim.ref, indent=1, sort_keys=True, default=str, ensure_ascii=False)
        return mask_secrets(text, _claim_secrets(claim))

    @admin.action(description="Retry the selected apps", permissions=["change"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[AppClaim]) -> None:
        # Imported here: polling pulls in the whole analysis stack, which browsing the admin never needs.
        from analyzer.ingestion.polling import claims_retry

        selected = list(queryset.values_list("pk", flat=True))
        reset = claims_retry(selected)
        skipped = len(selected) - reset
        message = f"{reset} app{'s' if reset != 1 else ''} will be fetched and analyzed again."
        if skipped:
            message += f" {skipped} other{'s' if skipped != 1 else ''} (analyzed, or being analyzed now): left as is."
        self.message_user(request, message, messages.SUCCESS if reset else messages.WARNING)
