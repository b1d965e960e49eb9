"""The report's first lines: the findings that cost the most, each with its cost and the changes to make (pure).

Findings at Moderate or worse, and Low ones that cost at least ``LOW_WORTH_SHARE``, ordered by cost share (of the
run's time, or of its memory-time for memory findings: both are shares of what this app used, so they compare),
then findings whose cost was not estimated, by severity. Two findings with the same fix (job and stage failures
both priced by removing the failed attempts) are one cost: only the more severe is listed. At most
``HEADLINE_SIZE``. A run with none has an empty headline: the report says so plainly. The summary sentence is the
JSON contract's (the CLI prints it as is); pages use the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from analysis.impact import Impact, fixes
from appmodel.formatting import format_duration, format_percent
from heuristics import Change, Severity

HEADLINE_SIZE: Final = 3
# Memory-time below this is not worth a word next to the time it cost (a small app's few GB-seconds).
MIN_SHOWN_GB_HOURS: Final = 0.01
# A Low finding makes the headline when fixing it would save at least this share of the run (or of its memory).
LOW_WORTH_SHARE: Final = 0.05


@dataclass(frozen=True, slots=True)
class HeadlineItem:
    code: str
    name: str
    severity: int
    impact: Impact | None
    summary: str
    changes: tuple[Change, ...]

    def to_dict(self, severity_names: Sequence[str]) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": severity_names[self.severity],
            "impact": None if self.impact is None else self.impact.to_dict(),
            "summary": self.summary,
            "changes": [change.to_dict() for change in self.changes],
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    """A finding as the headline reads it."""

    code: str
    name: str
    severity: int
    impact: Impact | None
    changes: tuple[Change, ...]


def headline(candidates: Sequence[Candidate], runtime_ms: float | None) -> tuple[HeadlineItem, ...]:
    """The top findings by cost, with their sentences."""
    worth = [c for c in candidates if c.severity >= Severity.MODERATE or _low_but_costly(c)]
    ranked = []
    fixes_seen: set[str] = set()
    for c in sorted(worth, key=_rank):
        if c.impact is not None:
            if c.impact.fix in fixes_seen:
                continue
            fixes_seen.add(c.impact.fix)
        ranked.append(c)
    return tuple(
        HeadlineItem(
            code=c.code,
            name=c.name,
            severity=c.severity,
            impact=c.impact,
            summary=summary(c.name, c.impact, runtime_ms),
            changes=c.changes,
        )
        for c in ranked[:HEADLINE_SIZE]
    )


def _low_but_costly(candidate: Candidate) -> bool:
    share = None if candidate.impact is None else candidate.impact.cost_share
    return candidate.severity >= Severity.LOW and share is not None and share >= LOW_WORTH_SHARE


def _rank(candidate: Candidate) -> tuple[int, float, int]:
    share = None if candidate.impact is None else candidate.impact.cost_share
    if share is None:
        return (1, 0.0, -candidate.severity)
    return (0, -share, -candidate.severity)


def summary(name: str, impact: Impact | None, runtime_ms: float | None) -> str:
    """ "Task skew: cost about 7 min 2 s of this 12 min 5 s run (58.2%)" and the like."""
    if impact is None:
        return f"{name}: cost not estimated"
    parts = []
    if impact.wall_ms and impact.wall_ms >= 1:
        of_run = f" of this {format_duration(runtime_ms)} run" if runtime_ms else ""
        share = f" ({format_percent(impact.share_of_runtime)})" if impact.share_of_runtime is not None else ""
        parts.append(f"cost about {format_duration(impact.wall_ms)}{of_run}{share}")
    if impact.gb_hours is not None and impact.fix in (fixes.IDLE, fixes.MEMORY):
        share = f" ({format_percent(impact.waste_share)} of the memory it held)" if impact.waste_share else ""
        parts.append(f"wasted {impact.gb_hours:.3g} GB·h{share}")
    elif impact.gb_hours is not None and impact.gb_hours >= MIN_SHOWN_GB_HOURS and parts:
        parts.append(f"{impact.gb_hours:.3g} GB·h")
    if impact.failure_risk is not None and impact.failure_risk >= 0.01:
        parts.append(f"a {format_percent(impact.failure_risk)} chance the next run fails at this failure rate")
    if not parts:
        return f"{name}: no measurable cost in this run"
    return f"{name}: " + ", ".join(parts)
