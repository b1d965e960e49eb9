"""The app list's search form: every field is a GET parameter, so a search is a shareable URL.

The filters mean what the REST API's do (``app_selectors.filter_apps`` serves both); the page keeps its older names
``min_severity`` (the API's ``severity_min``), ``severity`` (exactly) and ``analyzed`` (a window), and adds a
cluster value for apps analyzed from files. A bad value is shown on the form and ignored; the rest still searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from analyzer.models import AppType, Severity
from analyzer.selectors import apps as app_selectors

# "analyzed" parameter values -> how far back they reach.
ANALYZED_WINDOWS: Final[dict[str, timedelta]] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}

# The cluster filter's value for apps analyzed from files: not a valid cluster name (a slug), so never ambiguous.
NO_CLUSTER: Final = "(files)"

# Sortable columns: sort key -> how the results line says it, and whether a first click sorts descending.
SORT_KEYS: Final[dict[str, tuple[str, bool]]] = {
    "end_time": ("end time", True),
    "start_time": ("start time", True),
    "runtime_ms": ("runtime", True),
    "severity": ("severity", True),
    "score": ("score", True),
    "used_gb_hours": ("used GB-hours", True),
    "wasted_gb_hours": ("wasted GB-hours", True),
    "user": ("user", False),
    "name": ("name", False),
}
SORT_CHOICES: Final = [
    ("-end_time", "Latest end first"),
    ("end_time", "Earliest end first"),
    ("-start_time", "Latest start first"),
    ("start_time", "Earliest start first"),
    ("-runtime_ms", "Longest runtime first"),
    ("runtime_ms", "Shortest runtime first"),
    ("-severity", "Most severe first"),
    ("severity", "Least severe first"),
    ("-score", "Highest score first"),
    ("score", "Lowest score first"),
    ("-used_gb_hours", "Most GB-hours used first"),
    ("used_gb_hours", "Fewest GB-hours used first"),
    ("-wasted_gb_hours", "Most GB-hours wasted first"),
    ("wasted_gb_hours", "Fewest GB-hours wasted first"),
    ("user", "User A to Z"),
    ("-user", "User Z to A"),
    ("name", "Name A to Z"),
    ("-name", "Name Z to A"),
]
assert set(SORT_KEYS) == set(app_selectors.APP_ORDERINGS) == {value.removeprefix("-") for value, _ in SORT_CHOICES}
DEFAULT_SORT: Final = app_selectors.DEFAULT_APP_ORDERING


class SeverityField(forms.TypedChoiceField):
    """A severity level given as its number (``3``) or its name (``severe``), case-insensitive."""

    def __init__(self, *, empty_label: str, **kwargs: Any) -> None:
        choices = [("", empty_label), *((str(level.value), level.label) for level in Severity)]
        super().__init__(choices=choices, coerce=int, empty_value=None, required=False, **kwargs)
        names = ", ".join(level.label for level in Severity)
        self.error_messages["invalid_choice"] = f"Unknown severity %(value)s: use one of {names} or 0-4."

    def to_python(self, value: Any) -> str:
        text = super().to_python(value).strip()
        by_name = {level.label.lower(): str(level.value) for level in Severity}
        return by_name.get(text.lower(), text)


class InstantField(forms.Field):
    """An instant: ISO 8601 (what a datetime-local input sends; naive means UTC) or epoch milliseconds, as the API."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"})

    def to_python(self, value: Any) -> datetime | None:
        text = str(value or "").strip()
        if not text:
            return None
        parsed = app_selectors.parse_instant(text[:64])
        if parsed is None:
            raise forms.ValidationError(
                "Not a date-time (ISO 8601, e.g. 2026-03-01T12:00) or epoch milliseconds: %(value)s.",
                params={"value": repr(text[:50])},
            )
        return parsed

    def prepare_value(self, value: Any) -> Any:
        # The input shows a UTC wall-clock time (an epoch-ms or offset URL value included), which it sends back.
        parsed = value if isinstance(value, datetime) else app_selectors.parse_instant(str(value or "")[:64])
        if parsed is None:
            return value
        shown = parsed.astimezone(UTC)
        return shown.strftime("%Y-%m-%dT%H:%M" if shown.second == 0 else "%Y-%m-%dT%H:%M:%S")


def _text(label: str, max_length: int = 255, *, strip: bool = True) -> forms.CharField:
    return forms.CharField(required=False, max_length=max_length, label=label, strip=strip)


class AppSearchForm(forms.Form):
    q = _text("App id, user or name", 1000)
    app_id = _text("App id")
    user = _text("User")
    queue = _text("Queue")
    name = _text("Name contains", 1000)
    cluster = forms.ChoiceField(required=False, label="Cluster")
    min_severity = SeverityField(empty_label="Any", label="Severity at least")
    heuristic = forms.ChoiceField(required=False, label="Judged by heuristic")
    app_type = forms.ChoiceField(
        required=False, label="App type", choices=[("", "Any"), *((t.value, t.label) for t in AppType)]
    )
    job_type = _text("Job type", 64)
    flow_def_id = _text("Flow definition id")
    flow_exec_id = _text("Flow execution id")
    job_def_id = _text("Job definition id")
    template = _text("Template")
    severity = SeverityField(empty_label="Any", label="Severity exactly")
    analyzed = forms.ChoiceField(
        required=False,
        label="Analyzed within",
        choices=[("", "Any time"), ("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days")],
    )
    started_after = InstantField(required=False, label="Started from (UTC)")
    started_before = InstantField(required=False, label="Started before (UTC)")
    finished_after = InstantField(required=False, label="Ended from (UTC)")
    finished_before = InstantField(required=False, label="Ended before (UTC)")
    # The column headers sort too; this select is how a narrow screen (whose table has no header row) sorts.
    ordering = forms.ChoiceField(required=False, label="Sort by", choices=SORT_CHOICES)

    BASIC: Final = ("q", "app_id", "user", "name", "queue", "cluster", "min_severity", "heuristic", "ordering")
    MORE: Final = (
        "app_type",
        "job_type",
        "flow_def_id",
        "flow_exec_id",
        "job_def_id",
        "template",
        "severity",
        "analyzed",
        "started_after",
        "started_before",
        "finished_after",
        "finished_before",
    )

    def __init__(
        self, *args: Any, clusters: Sequence[str] = (), heuristics: Sequence[tuple[str, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        cluster_field: Any = self.fields["cluster"]
        cluster_field.choices = [("", "Any"), *((name, name) for name in clusters), (NO_CLUSTER, "Files (no cluster)")]
        heuristic_field: Any = self.fields["heuristic"]
        heuristic_field.choices = [("", "Any"), *((code, f"{name} ({code})") for code, name in heuristics)]

    def basic_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.BASIC]

    def more_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.MORE]

    def more_open(self) -> bool:
        """Whether "More filters" starts open: one of its fields was given (valid or not)."""
        return any(str(self.data.get(name, "")).strip() for name in self.MORE)

    def valid_filters(self) -> dict[str, Any]:
        """The fields that validated (a bad one is reported on the form and ignored, never fatal)."""
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}

    def filtered(self) -> bool:
        return any(name != "ordering" for name in self.valid_filters())

    def sort(self) -> str:
        return str(self.valid_filters().get("ordering") or DEFAULT_SORT)

    def sort_description(self) -> str:
        text = dict(SORT_CHOICES)[self.sort()]
        return text[0].lower() + text[1:]

    def search(self, *, now: datetime) -> dict[str, Any]:
        """Keyword arguments for ``app_selectors.app_search`` from the valid fields."""
        given = self.valid_filters()
        window = ANALYZED_WINDOWS.get(given.get("analyzed", ""))
        cluster = given.get("cluster", "")
        filters = app_selectors.AppFilters(
            queue=given.get("queue", ""),
            app_type=given.get("app_type", ""),
            job_type=given.get("job_type", ""),
            cluster="" if cluster == NO_CLUSTER else cluster,
            no_cluster=cluster == NO_CLUSTER,
            flow_def_id=given.get("flow_def_id", ""),
            flow_exec_id=given.get("flow_exec_id", ""),
            job_def_id=given.get("job_def_id", ""),
            template=given.get("template", ""),
            severity_min=given.get("min_severity"),
            heuristic=given.get("heuristic", ""),
            started_after=given.get("started_after"),
            started_before=given.get("started_before"),
            finished_after=given.get("finished_after"),
            finished_before=given.get("finished_before"),
            ids_by_prefix=True,
        )
        return {
            "query": given.get("q", ""),
            "app_id": given.get("app_id", ""),
            "user": given.get("user", ""),
            "name": given.get("name", ""),
            "severity": given.get("severity"),
            "analyzed_since": now - window if window else None,
            "filters": filters,
            "ordering": self.sort(),
        }


# Flow, history, compare and user pages. Ids are data (an Airflow run id holds a slash and colons, an Azkaban one a
# URL), so they come as query parameters; a form that does not validate is a 400 page naming the problem.

ID_MAX_CHARS: Final = 255


def _id_field(label: str, *, required: bool = True) -> forms.CharField:
    # strip=False: an id is matched exactly as stored, spaces included.
    return forms.CharField(required=required, max_length=ID_MAX_CHARS, label=label, strip=False)


class ProblemForm(forms.Form):
    def problems(self) -> list[str]:
        """Each error as one sentence naming its parameter."""
        return [
            f"{name}: {error}" if name != NON_FIELD_ERRORS else str(error)
            for name, errors in self.errors.items()
            for error in errors
        ]


class FlowRunForm(ProblemForm):
    flow_exec_id = _id_field("Flow execution id")
    cluster = forms.CharField(required=False, max_length=64, label="Cluster")


class HistoryForm(ProblemForm):
    KEYS: Final = ("job_def_id", "flow_def_id", "template")

    job_def_id = _id_field("Job definition id", required=False)
    flow_def_id = _id_field("Flow definition id", required=False)
    template = _id_field("Template", required=False)
    cluster = forms.CharField(required=False, max_length=64, label="Cluster")
    limit = forms.IntegerField(required=False, min_value=1, max_value=500, label="Runs")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        given = [name for name in self.KEYS if cleaned.get(name)]
        if len(given) != 1:
            raise forms.ValidationError("Give exactly one of job_def_id, flow_def_id and template.")
        return cleaned

    @property
    def by(self) -> str:
        return next(name for name in self.KEYS if self.cleaned_data.get(name))


class CompareForm(ProblemForm):
    a = _id_field("Flow execution A (baseline)")
    b = _id_field("Flow execution B")
    cluster = forms.CharField(required=False, max_length=64, label="Cluster")


USER_PERIODS: Final = (1, 7, 30, 90, 365)
USER_DEFAULT_DAYS: Final = 7


class UserForm(ProblemForm):
    user = forms.CharField(max_length=255, label="User", strip=False)
    days = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[(str(d), f"Last {d} day{'s' if d > 1 else ''}") for d in USER_PERIODS],
        label="Period",
    )
