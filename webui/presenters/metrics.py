"""An app's metrics as the report and the help page show them: display labels, display units, which few lead the
report, and the order.

The values come typed from the report's read model (``analyzer.selectors.report``: ``AppReport.metric_values``);
the definitions and their order from the analysis (``analysis.metrics.metric_definitions``), whose fields are the
stored metrics' (``analyzer.schema.SparkMetrics`` and ``MapReduceMetrics`` are derived from the same dataclasses).
A stored key no definition names (an older or newer version's) is still shown, last. The template filter
``metric`` (``webui.templatetags.hindsight``) writes a value by its unit, and the help page lists every metric
under the labels given here, so a report's label always links to its definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from analysis.metrics import metric_definitions


@dataclass(frozen=True, slots=True)
class MetricValue:
    """One app-level metric as the report shows it; ``value`` is None when the log did not tell."""

    key: str
    label: str
    value: float | int | str | None
    unit: str  # "ms", "gb_hours", "ratio", "bytes", "count" or "" (shown as is)
    definition: str = ""
    key_metric: bool = False  # one of the few shown first and large

    @property
    def help_anchor(self) -> str:
        return f"metric-{self.key}"


# The metrics a report leads with, and their display labels.
KEY_METRICS: Final[dict[str, str]] = {
    "runtime_ms": "Runtime",
    "used_gb_hours": "Used resources",
    "wasted_gb_hours": "Wasted resources",
    "core_utilization": "Core utilization",
    "first_task_delay_ms": "First task delay",
}
# analysis.metrics unit names -> display units.
_UNITS: Final[dict[str, str]] = {"ms": "ms", "GiB-hours": "gb_hours", "bytes": "bytes"}


def metric_unit(key: str, declared: str = "") -> str:
    """The display unit of a metric: from the unit the analysis declares, else guessed from the key's name (a stored
    key the analysis does not know, from an older or newer version)."""
    if declared in _UNITS:
        return _UNITS[declared]
    if key.endswith("_ms"):
        return "ms"
    if key.endswith("_bytes"):
        return "bytes"
    if key.endswith("_gb_hours"):
        return "gb_hours"
    if key.endswith(("_ratio", "_utilization", "_fraction")):
        return "ratio"
    if key.startswith(("num_", "max_concurrent_")):
        return "count"
    return ""


def metric_label(key: str) -> str:
    """A metric's display label: a key metric's own, else its key in words without the unit ("Total task time")."""
    if key in KEY_METRICS:
        return KEY_METRICS[key]
    stem = key.removeprefix("num_")
    for suffix in ("_ms", "_bytes", "_gb_hours"):
        stem = stem.removesuffix(suffix)
    return stem.replace("_", " ").capitalize()


def metric_help() -> list[tuple[str, str, str]]:
    """(key, label, definition) of every metric the analysis computes, in display order."""
    return [(name, metric_label(name), doc) for name, _unit, doc in metric_definitions("ALL") if name != "notes"]


def app_metrics(app_type: str, values: Mapping[str, float | int | str | None]) -> list[MetricValue]:
    """An app's metrics in the analysis's display order, key metrics first; stored keys it does not know last.

    ``values`` are the app's metrics by key (``AppReport.metric_values``); a metric the analysis defines and
    ``values`` lacks is shown as unknown.
    """
    definitions = {name: (unit, doc) for name, unit, doc in metric_definitions(app_type)}
    order = [*KEY_METRICS, *(name for name in definitions if name not in KEY_METRICS)]
    order += sorted(key for key in values if key not in definitions)
    shown: list[MetricValue] = []
    for key in order:
        unit, doc = definitions.get(key, ("", ""))
        shown.append(
            MetricValue(key, metric_label(key), values.get(key), metric_unit(key, unit), doc, key in KEY_METRICS)
        )
    return shown
