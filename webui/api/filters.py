"""The app list's query parameters (django-filter): the search page's filters under the API's names."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import django_filters  # type: ignore[import-untyped]
from django import forms
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field

from analyzer.models import AnalyzedApp, AppType, Severity
from analyzer.selectors import apps as app_selectors
from analyzer.selectors import gate as gate_selectors

# ordering values -> model field; each may be "-"-prefixed for descending. Ties break on the id.
ORDERING_FIELDS: Final[dict[str, str]] = {
    key: app_selectors.APP_ORDERINGS[key]
    for key in ("end_time", "start_time", "severity", "score", "runtime_ms", "wasted_gb_hours")
}
ORDERING_CHOICES: Final[list[str]] = [value for name in ORDERING_FIELDS for value in (name, f"-{name}")]
DEFAULT_ORDERING: Final = "-end_time"


class SeverityFormField(forms.Field):
    def to_python(self, value: Any) -> int | None:
        if value in (None, ""):
            return None
        level = gate_selectors.parse_severity(str(value))
        if level is None:
            names = ", ".join(level.name for level in Severity)
            # The value goes in params: django-filter formats the message with them ("%" in a value is data).
            raise forms.ValidationError(
                "Unknown severity %(value)s: use one of %(names)s or 0-4.",
                params={"value": repr(str(value)[:50]), "names": names},
            )
        return level


class InstantFormField(forms.Field):
    """An instant as ISO 8601 (a naive one is UTC) or as epoch milliseconds."""

    def to_python(self, value: Any) -> datetime | None:
        if value in (None, ""):
            return None
        text = str(value).strip()
        parsed = app_selectors.parse_instant(text)
        if parsed is None:
            raise forms.ValidationError(
                "Not an ISO 8601 date-time or epoch milliseconds: %(value)s.", params={"value": repr(text[:50])}
            )
        return parsed


@extend_schema_field(
    {
        "type": "string",
        "description": "NONE, LOW, MODERATE, SEVERE, CRITICAL (any case) or 0-4: the app's severity at least this "
        "(with heuristic=: that heuristic's severity).",
    }
)
class SeverityFilter(django_filters.Filter):
    field_class = SeverityFormField


@extend_schema_field(
    {"type": "string", "description": "ISO 8601 date-time (UTC when it has no offset) or epoch milliseconds."}
)
class InstantFilter(django_filters.Filter):
    field_class = InstantFormField


def _app_type_choices() -> list[tuple[str, str]]:
    return [(t.value, t.label) for t in AppType]


class AppFilter(django_filters.FilterSet):
    app_id = django_filters.CharFilter(
        method="filter_noop",
        max_length=255,
        help_text="An app id with or without its application_/job_ prefix (either prefix matches), or part of one.",
    )
    user = django_filters.CharFilter(field_name="user", max_length=255, help_text="Exact user.")
    queue = django_filters.CharFilter(field_name="queue", max_length=255, help_text="Exact queue.")
    name = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", max_length=1000, help_text="Part of the app name."
    )
    app_type = django_filters.ChoiceFilter(
        field_name="app_type", choices=_app_type_choices, help_text="SPARK or MAPREDUCE."
    )
    job_type = django_filters.CharFilter(field_name="job_type", max_length=64, help_text="Exact job type.")
    cluster = django_filters.CharFilter(field_name="cluster__name", max_length=64, help_text="Cluster name.")
    flow_def_id = django_filters.CharFilter(field_name="flow_def_id", max_length=255, help_text="Exact.")
    flow_exec_id = django_filters.CharFilter(field_name="flow_exec_id", max_length=255, help_text="Exact.")
    job_def_id = django_filters.CharFilter(field_name="job_def_id", max_length=255, help_text="Exact.")
    template = django_filters.CharFilter(field_name="template", max_length=255, help_text="Exact template key.")
    severity_min = SeverityFilter(
        method="filter_noop",
        help_text="NONE, LOW, MODERATE, SEVERE, CRITICAL or 0-4: the app's severity at least this "
        "(with heuristic=: that heuristic's severity).",
    )
    heuristic = django_filters.CharFilter(
        method="filter_noop",
        max_length=128,
        help_text="A heuristic code: apps it judged (with severity_min=: at least that severe).",
    )
    started_after = InstantFilter(field_name="start_time", lookup_expr="gte", help_text="ISO 8601 or epoch ms.")
    started_before = InstantFilter(field_name="start_time", lookup_expr="lt", help_text="ISO 8601 or epoch ms.")
    finished_after = InstantFilter(field_name="end_time", lookup_expr="gte", help_text="ISO 8601 or epoch ms.")
    finished_before = InstantFilter(field_name="end_time", lookup_expr="lt", help_text="ISO 8601 or epoch ms.")
    ordering = django_filters.ChoiceFilter(
        method="filter_noop",
        choices=[(value, value) for value in ORDERING_CHOICES],
        help_text="Sort key, '-' for descending; missing values sort last. Default -end_time.",
    )

    class Meta:
        model = AnalyzedApp
        fields: list[str] = []

    def filter_noop(self, queryset: QuerySet[AnalyzedApp], name: str, value: Any) -> QuerySet[AnalyzedApp]:
        return queryset  # applied together in filter_queryset

    def filter_queryset(self, queryset: QuerySet[AnalyzedApp]) -> QuerySet[AnalyzedApp]:
        # The declarations above name, validate and document the parameters; the filtering itself is the search
        # page's (app_selectors.filter_apps), so the two cannot drift. Flow and job ids match exactly here.
        data = self.form.cleaned_data
        given = {name: data[name] for name in _FILTER_NAMES if data.get(name) not in (None, "")}
        queryset = app_selectors.filter_apps(queryset, app_selectors.AppFilters(**given))
        return order_apps(queryset, data.get("ordering") or DEFAULT_ORDERING)


_FILTER_NAMES: Final = tuple(
    name for name in AppFilter.base_filters if name in app_selectors.AppFilters.__dataclass_fields__
)


def order_apps(queryset: QuerySet[AnalyzedApp], ordering: str) -> QuerySet[AnalyzedApp]:
    """Sort by a known key; missing values last either way, the id breaks ties (stable pages)."""
    return app_selectors.order_apps(queryset, ordering)
