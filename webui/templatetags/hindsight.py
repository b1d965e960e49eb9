"""Formatting for the report pages. Filters return plain strings, so Django escapes them like any value;
the only HTML built here comes from ``format_html`` with fixed markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from django import template
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from analyzer.models import Severity
from appmodel.coerce import opt_finite
from appmodel.formatting import (
    MISSING,
    page_bytes,
    page_count,
    page_duration,
    page_duration_s,
    page_gb_hours,
    page_mebibytes,
    page_percent,
    page_share,
    page_value,
)
from heuristics.severity import is_four_levels
from webui.forms import DEFAULT_SORT, SORT_KEYS
from webui.help import inline_segments
from webui.presenters import impact as impact_presenter
from webui.presenters.metrics import MetricValue

register = template.Library()

# One shape per level, so severity reads without colour too (the label is always shown as well).
_SHAPES: Final[dict[int, str]] = {
    0: '<path d="M2 6.5 4.8 9.2 10 3" fill="none" stroke="currentColor" stroke-width="2"/>',
    1: '<circle cx="6" cy="6" r="3.2" fill="currentColor"/>',
    2: '<path d="M6 .8 11.5 10.8H.5z" fill="currentColor"/>',
    3: '<path d="M6 .3 11.7 6 6 11.7.3 6z" fill="currentColor"/>',
    4: '<path d="M3.5.5h5l3 3v5l-3 3h-5l-3-3v-5z" fill="currentColor"/>'
    '<path d="M5.1 2.6h1.8v4.3H5.1zM5.1 7.9h1.8v1.6H5.1z" fill="#fff"/>',
}


# The pages' number formats are appmodel.formatting's page family, registered under the names templates use.
register.filter("duration", page_duration)
register.filter("duration_s", page_duration_s)
register.filter("gb_hours", page_gb_hours)
register.filter("percent", page_percent)
register.filter("share_of", page_share)
register.filter("data_size", page_bytes)
register.filter("mebibytes", page_mebibytes)
register.filter("count", page_count)
register.filter("plain", page_value)


@register.filter
def ago(moment: Any) -> str:
    """How long before now ``moment`` was, as "8.0 s ago" or "1 h 5 min ago"."""
    if not isinstance(moment, datetime):
        return MISSING
    seconds = max(0.0, (timezone.now() - moment).total_seconds())
    return f"{page_duration_s(seconds)} ago"


@register.filter
def elapsed(start: Any, end: Any) -> str:
    """The time from ``start`` to ``end`` (datetimes), as the ``duration`` filter writes it."""
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        return MISSING
    return page_duration((end - start).total_seconds() * 1000)


@register.filter
def metric(value: MetricValue) -> str:
    formatters = {
        "ms": page_duration,
        "gb_hours": page_gb_hours,
        "ratio": page_percent,
        "bytes": page_bytes,
        "count": page_count,
    }
    if value.value is None:
        return MISSING
    return formatters.get(value.unit, page_value)(value.value)


def _stage_ref(ref: Any) -> tuple[str, str]:
    # Heuristics store [stage_id, attempt_id]; tolerate a bare stage id too.
    if isinstance(ref, list | tuple) and ref:
        return str(ref[0]), str(ref[1]) if len(ref) > 1 and ref[1] is not None else "0"
    return str(ref), "0"


@register.filter
def stage_anchor(ref: Any) -> str:
    stage_id, attempt_id = _stage_ref(ref)
    return f"stage-{stage_id}-{attempt_id}"


@register.filter
def stage_label(ref: Any) -> str:
    stage_id, attempt_id = _stage_ref(ref)
    return stage_id if attempt_id == "0" else f"{stage_id}.{attempt_id}"


@dataclass(frozen=True, slots=True)
class FindingRows:
    judged: list[tuple[str, Any, Any]]  # (measure, observed value, four thresholds)
    observed: list[tuple[str, Any]]  # other observed values
    settings: list[tuple[str, Any]]  # other configuration the heuristic applied


@register.filter
def finding_rows(result: Any) -> FindingRows:
    """A finding's observed values and thresholds, split into what was judged against four levels and the rest.

    A heuristic records the value it judged under the threshold's key; four levels with no such value (a guard
    held, the data was missing) judged nothing and are only a setting.
    """
    observed = result.observed if isinstance(result.observed, dict) else {}
    thresholds = result.thresholds if isinstance(result.thresholds, dict) else {}
    judged = [
        (key, observed[key], value) for key, value in thresholds.items() if is_four_levels(value) and key in observed
    ]
    judged_keys = {key for key, _, _ in judged}
    return FindingRows(
        judged=judged,
        observed=[(key, value) for key, value in observed.items() if key not in judged_keys],
        settings=[(key, value) for key, value in thresholds.items() if key not in judged_keys],
    )


register.filter("finding_cost", impact_presenter.finding_cost)
register.filter("finding_changes", impact_presenter.changes)
register.filter("rule_note", impact_presenter.rule_note)


@register.filter
def inline(text: Any) -> list[tuple[bool, str]]:
    """(is_code, text) pieces of help text, so templates can wrap code in <code> and still escape it."""
    return inline_segments(str(text))


@register.filter
def get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def severity_label(level: Any) -> str:
    try:
        return Severity(int(level)).label
    except (TypeError, ValueError):
        return "Unknown"


@register.simple_tag
def severity_badge(level: Any) -> SafeString:
    """A badge with a shape, a colour and the severity's name."""
    try:
        severity = Severity(int(level))
    except (TypeError, ValueError):
        return format_html('<span class="sev">{}</span>', "Unknown")
    return format_html(
        '<span class="sev sev-{}"><svg class="sev-icon" viewBox="0 0 12 12" width="13" height="13" '
        'aria-hidden="true" focusable="false">{}</svg>{}</span>',
        severity.value,
        SafeString(_SHAPES[severity.value]),  # fixed markup above, never data
        severity.label,
    )


@register.inclusion_tag("webui/_sort_header.html", takes_context=True)
def sort_header(context: template.Context, label: str, column: str, current: str, anchor: str = "") -> dict[str, Any]:
    """A column header linking to this page sorted by ``column``; a second click reverses the order."""
    request: HttpRequest = context["request"]
    params = request.GET.copy()
    ascending_now = current == column
    descending_now = current == f"-{column}"
    params["stage_sort"] = f"-{column}" if ascending_now else column
    params.pop("page", None)
    state = "ascending" if ascending_now else "descending" if descending_now else "none"
    return {
        "label": label,
        "url": f"?{params.urlencode()}{'#' + anchor if anchor else ''}",
        "state": state,
    }


@register.inclusion_tag("webui/_sort_header.html", takes_context=True)
def app_sort_header(context: template.Context, label: str, column: str, css: str = "") -> dict[str, Any]:
    """An app list column header linking to the list sorted by ``column`` (``ordering``, every other parameter
    kept, back to page 1). A first click sorts times and amounts largest first, text A to Z; a second reverses."""
    request: HttpRequest = context["request"]
    current: str = context.get("sort") or DEFAULT_SORT
    ascending_now = current == column
    descending_now = current == f"-{column}"
    _, descending_first = SORT_KEYS[column]
    if ascending_now or descending_now:
        target = column if descending_now else f"-{column}"
    else:
        target = f"-{column}" if descending_first else column
    params = request.GET.copy()
    params["ordering"] = target
    params.pop("page", None)
    direction = "ascending" if target == column else "descending"
    return {
        "label": label,
        "url": f"?{params.urlencode()}",
        "state": "ascending" if ascending_now else "descending" if descending_now else "none",
        "css": css,
        "title": f"Sort by {SORT_KEYS[column][0]}, {direction}",
    }


# Flow runs, histories and comparisons


_ABBREVIATIONS: Final[dict[int, str]] = {0: "N", 1: "L", 2: "M", 3: "S", 4: "C"}


@register.simple_tag
def severity_mark(level: Any) -> SafeString:
    """A compact severity for strips and grids: shape, colour and a letter, with the full name for screen readers
    and as a tooltip. No finding is a dash, said as such."""
    try:
        severity = Severity(int(level))
    except (TypeError, ValueError):
        return format_html(
            '<span class="mark mark-absent" title="{}">—<span class="visually-hidden">{}</span></span>',
            "No finding",
            "No finding",
        )
    return format_html(
        '<span class="mark sev-{}" title="{}"><svg class="sev-icon" viewBox="0 0 12 12" width="11" height="11" '
        'aria-hidden="true" focusable="false">{}</svg><span aria-hidden="true">{}</span>'
        '<span class="visually-hidden">{}</span></span>',
        severity.value,
        severity.label,
        SafeString(_SHAPES[severity.value]),  # fixed markup above, never data
        _ABBREVIATIONS[severity.value],
        severity.label,
    )


def _signed(number: float, magnitude: str) -> str:
    return f"+{magnitude}" if number > 0 else f"-{magnitude}" if number < 0 else magnitude


_CHANGE_FORMATS: Final = {"duration": page_duration, "gb_hours": page_gb_hours, "count": page_count}


@register.simple_tag
def change(difference: Any, kind: str = "count") -> SafeString:
    """A difference ``b - a`` with a word saying which way it went, not only a colour: more time, resources, score
    or severity is worse. ``kind`` is "duration", "gb_hours", "count" or "severity"."""
    number = opt_finite(difference)
    if number is None:
        return format_html('<span class="delta delta-unknown">{}</span>', MISSING)
    if kind == "severity":
        magnitude = f"{abs(int(number))} level{'s' if abs(number) != 1 else ''}" if number else "same"
    else:
        magnitude = _CHANGE_FORMATS.get(kind, page_count)(abs(number))
    # GB-hours print with three decimals: a change too small to print is no change.
    if number == 0 or magnitude in ("0 ms", "0.000 GB·h", "0"):
        return format_html(
            '<span class="delta delta-same">{} <span class="delta-word">same</span></span>',
            "=" if kind == "severity" else magnitude,
        )
    worse = number > 0
    return format_html(
        '<span class="delta {}">{} <span class="delta-word">{} {}</span></span>',
        "delta-worse" if worse else "delta-better",
        _signed(number, magnitude) if kind != "severity" else ("+" if worse else "-") + magnitude,
        "▲" if worse else "▼",
        "worse" if worse else "better",
    )


@register.filter
def http_url(value: Any) -> str:
    """``value`` if it is an http(s) URL, safe to put in a link; "" otherwise (``javascript:`` and the like)."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("http://", "https://")) else ""


@register.filter
def is_changed(job: Any) -> bool:
    """Whether a compared job differs between the two runs in anything the comparison shows."""
    if not getattr(job, "matched", False):
        return True
    values = (job.runtime_ms, job.used_gb_hours, job.wasted_gb_hours, job.score, job.severity)
    return bool(job.heuristics) or any(opt_finite(v) not in (None, 0.0) for v in values)


@register.filter
def flagged(findings: Any) -> list[tuple[str, int]]:
    """The (code, severity) findings of ``{code: severity}`` that call for a fix (Moderate or worse)."""
    if not isinstance(findings, dict):
        return []
    return [(code, level) for code, level in findings.items() if isinstance(level, int) and level >= Severity.MODERATE]
