"""The app list's search form: every field is a GET parameter, so a search is a shareable URL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from analyzer.models import Severity

# "analyzed" parameter values -> how far back they reach.
ANALYZED_WINDOWS: Final[dict[str, timedelta]] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}


class SeverityField(forms.TypedChoiceField):
    """A severity level given as its number (``3``) or its name (``severe``), case-insensitive."""

    def __init__(self, *, empty_label: str, **kwargs: Any) -> None:
        choices = [("", empty_label), *((str(level.value), level.label) for level in Severity)]
        super().__init__(choices=choices, coerce=int, empty_value=None, required=False, **kwargs)

    def to_python(self, value: Any) -> str:
        text = super().to_python(value).strip()
        by_name = {level.label.lower(): str(level.value) for level in Severity}
        return by_name.get(text.lower(), text)


class AppSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=1000, label="App id, user or name", strip=True)
    app_id = forms.CharField(required=False, max_length=255, label="App id", strip=True)
    user = forms.CharField(required=False, max_length=255, label="User", strip=True)
    name = forms.CharField(required=False, max_length=1000, label="Name contains", strip=True)
    min_severity = SeverityField(empty_label="Any", label="Severity at least")
    severity = SeverityField(empty_label="Any", label="Severity exactly")
    analyzed = forms.ChoiceField(
        required=False,
        label="Analyzed within",
        choices=[("", "Any time"), ("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days")],
    )

    def valid_filters(self) -> dict[str, Any]:
        """The fields that validated (a bad one is reported on the form and ignored, never fatal)."""
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


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
