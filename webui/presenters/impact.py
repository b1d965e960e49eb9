"""What the findings cost, as the report page shows it: the headline panel, each finding's cost and rule severity,
and the what-if chart (docs/IMPACT.md).

The numbers are ``analyzer.selectors.report``'s typed data (``AppReport.headline``, ``.what_if``,
``finding_impact``, ``finding_changes``); this module only words and shapes them. The what-if chart's ``data`` is
plain JSON the page embeds with ``json_script`` and ``webui/static/webui/charts.js`` draws (``data-chart=
"what-if"``); the same points are a table beside it for readers without the chart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from analysis.impact import headline as headline_rules
from analysis.impact import profile, whatif
from analyzer import schema
from analyzer.models import AppType, HeuristicResult, Severity
from analyzer.selectors.report import AppReport, finding_changes, finding_impact
from appmodel.formatting import page_duration, page_percent


def help_figures() -> dict[str, str]:
    """The impact rules' figures for the help page, from the constants that decide them (one place per default)."""
    return {
        "headline_size": str(headline_rules.HEADLINE_SIZE),
        "low_worth": page_percent(headline_rules.LOW_WORTH_SHARE, 0),
        "ideal_tolerance": page_percent(whatif.IDEAL_TOLERANCE, 0),
        "severe": page_percent(profile.SEVERE_SHARE, 0),
        "moderate": page_percent(profile.MODERATE_SHARE, 0),
        "low_ceiling": page_percent(profile.LOW_CEILING_SHARE, 0),
        "moderate_ceiling": page_percent(profile.MODERATE_CEILING_SHARE, 0),
    }


# The replay is "close" when its runtime at the run's own executors is within this share of the real one (the
# replay's accuracy on real runs, docs/IMPACT.md: within 10 %).
CLOSE_REPLAY: Final = 0.10
NOTHING_WORTH_CHANGING: Final = (
    "Nothing here is worth changing: no finding cost this run enough of its time or memory to act on."
)
NOT_COSTED: Final = (
    "The costs of this app's findings could not be estimated (its tasks could not be replayed): the findings below "
    "are ordered by severity."
)
BEFORE_COSTS: Final = (
    "This app was analyzed before Hindsight estimated what findings cost: analyze it again to see what is worth "
    "changing."
)


def gb_hours(value: float | None) -> str:
    """GB-hours in three significant digits ("0.0038 GB·h", "12.5 GB·h", "1,234 GB·h"): a finding's cost on a
    small app is a fraction of a GB-hour, which the metrics' three decimals would show as 0.000."""
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f} GB·h"
    return f"{float(f'{value:.3g}'):g} GB·h"


@dataclass(frozen=True, slots=True)
class Cost:
    """A finding's cost in words: the time it lost (and its share of the run) and the GB-hours."""

    time: str  # "10.0 s (60.9 % of the run)", or "" for a finding that costs memory, not time
    memory: str  # "0.0038 GB·h", "wasted 2.1 GB·h" for memory findings, or "" when the memory is unknown

    @property
    def text(self) -> str:
        return ", ".join(part for part in (self.time, self.memory) if part) or "no measurable cost in this run"


def cost(impact: schema.Impact | None) -> Cost | None:
    """``impact`` in words; None when the cost was not estimated."""
    if impact is None:
        return None
    time = ""
    if impact.wall_ms:
        share = f" ({page_percent(impact.share_of_runtime)} of the run)" if impact.share_of_runtime is not None else ""
        time = f"{page_duration(impact.wall_ms)}{share}"
    memory = ""
    if impact.gb_hours is not None:
        memory = gb_hours(impact.gb_hours) if impact.wall_ms else f"wasted {gb_hours(impact.gb_hours)}"
    return Cost(time=time, memory=memory)


def finding_cost(result: HeuristicResult) -> Cost | None:
    """A stored finding's cost in words (the findings list); None when not estimated."""
    return cost(finding_impact(result))


def changes(result: HeuristicResult) -> list[schema.Change]:
    """A stored finding's changes (the findings list)."""
    return finding_changes(result)


def rule_note(result: HeuristicResult) -> str:
    """ "rule: Critical, lowered by cost" when the severity profile changed the heuristic's own severity, else ""."""
    rule = result.rule_severity
    if rule is None or rule == result.severity:
        return ""
    direction = "lowered" if result.severity < rule else "raised"
    return f"rule: {Severity(rule).label}, {direction} by cost"


@dataclass(frozen=True, slots=True)
class HeadlineEntry:
    code: str
    name: str
    severity: int
    summary: str  # the analysis's sentence ("Small tasks: cost about 10 s of this 16.4 s run (60.9%), ...")
    changes: list[schema.Change]
    anchor: str  # the finding's id on the page ("h-1"), "" when it is not listed


@dataclass(frozen=True, slots=True)
class HeadlinePanel:
    entries: list[HeadlineEntry]
    empty: str  # the sentence shown when there are no entries


def headline_panel(report: AppReport) -> HeadlinePanel:
    """The report's first panel: the costliest findings with their changes, or why there is nothing to show."""
    position = {result.code: i for i, result in enumerate(report.heuristics)}
    entries = []
    for item in report.headline:
        index = position.get(item.code)
        result = None if index is None else report.heuristics[index]
        entries.append(
            HeadlineEntry(
                code=item.code,
                name=result.name if result is not None else item.code,
                severity=int(Severity[item.severity]),
                summary=item.summary,
                changes=list(item.changes),
                anchor="" if index is None else f"h-{index + 1}",
            )
        )
    if entries:
        empty = ""
    elif not report.app.severity_profile:
        empty = BEFORE_COSTS if report.heuristics else NOTHING_WORTH_CHANGING
    elif report.app.severity >= Severity.MODERATE and not any(finding_impact(r) for r in report.heuristics):
        empty = NOT_COSTED
    else:
        empty = NOTHING_WORTH_CHANGING
    return HeadlinePanel(entries=entries, empty=empty)


@dataclass(frozen=True, slots=True)
class WhatIfPoint:
    executors: int
    runtime_ms: int
    own: bool
    ideal: bool


@dataclass(frozen=True, slots=True)
class WhatIfChart:
    what_if: schema.WhatIf
    unit: str  # "executors", or "containers" for a MapReduce job
    points: list[WhatIfPoint]
    summary: str  # the chart's answer in one sentence
    accuracy: str  # the replay's error in words
    data: dict[str, Any]


def _accuracy(error: float | None) -> str:
    if error is None:
        return "The real runtime is unknown, so how close the replay came to it is unknown."
    off = page_percent(abs(error))
    way = "shorter" if error < 0 else "longer"
    if abs(error) <= CLOSE_REPLAY:
        return (
            f"Replayed at its own executors, the model's runtime is {off} {way} than the real one: the estimates "
            "are close."
        )
    return (
        f"Replayed at its own executors, the model's runtime is {off} {way} than the real one (more than "
        f"{page_percent(CLOSE_REPLAY, 0)}): read the estimates as rough."
    )


def what_if_chart(report: AppReport) -> WhatIfChart | None:
    """The runtime against executors, the run's own count and the ideal marked; None without what-if answers."""
    answer = report.what_if
    if answer is None:
        return None
    points = []
    for key, runtime in answer.runtime_ms_at.items():
        try:
            executors = int(key)
        except ValueError:  # a stored key is a count as text; anything else is not plotted
            continue
        points.append(
            WhatIfPoint(executors, runtime, executors == answer.own_executors, executors == answer.ideal_executors)
        )
    points.sort(key=lambda point: point.executors)
    if not points:
        return None
    by_count = {point.executors: point.runtime_ms for point in points}
    own, ideal = answer.own_executors, answer.ideal_executors
    cores = answer.cores_per_executor
    slots = "container" if report.app.app_type == AppType.MAPREDUCE else "executor"  # a MapReduce job's task slots
    summary = f"This run had {own} {slots}{'' if own == 1 else 's'}"
    if slots == "executor":
        summary += f" of {cores} core{'' if cores == 1 else 's'}"
    if own in by_count:
        summary += f" and took {page_duration(by_count[own])}"
    if ideal == own:
        summary += "; that is already the ideal count"
    elif ideal in by_count:
        within = page_percent(whatif.IDEAL_TOLERANCE, 0)
        summary += f"; with {ideal} (the ideal: the fewest within {within} of the best) it would take about "
        summary += page_duration(by_count[ideal])
    summary += f". No number of {slots}s runs faster than the critical path, {page_duration(answer.critical_path_ms)}."
    data = {
        "executors": [point.executors for point in points],
        "runtime_ms": [point.runtime_ms for point in points],
        "own_executors": own,
        "ideal_executors": ideal,
        "critical_path_ms": answer.critical_path_ms,
        "unit": f"{slots}s",
    }
    return WhatIfChart(
        what_if=answer,
        unit=f"{slots}s",
        points=points,
        summary=summary,
        accuracy=_accuracy(answer.replay_error),
        data=data,
    )
