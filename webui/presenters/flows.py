"""Flow runs and histories on the page: which heuristic codes a run's grid has, and the history's severity strip.

The runs and their findings come from ``analyzer.selectors.flows`` (``{code: severity}`` per app or per point);
this module only arranges them into the rows the templates draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from analyzer.selectors.flows import HistoryPoint

# One row of the strip: a heuristic code and, for each point oldest first, the point and its severity for that code
# (None when the point has no finding of it).
StripRow = tuple[str, list[tuple[HistoryPoint, int | None]]]


def finding_codes(findings: Iterable[dict[str, int]]) -> list[str]:
    """Heuristic codes in the order they first appear (the analysis's order), each once."""
    seen: dict[str, None] = {}
    for by_code in findings:
        seen.update(dict.fromkeys(by_code))
    return list(seen)


def severity_strip(points: Sequence[HistoryPoint]) -> list[StripRow]:
    """The history page's "Severity by heuristic" strip: one row per code any point has, in
    :func:`finding_codes` order, with each point's severity for it."""
    codes = finding_codes(point.heuristics for point in points)
    return [(code, [(point, point.heuristics.get(code)) for point in points]) for code in codes]
