"""The app list's search form: every field is a GET parameter, so a search is a shareable URL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from django import forms

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
