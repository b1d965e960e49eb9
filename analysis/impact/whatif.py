"""What-if answers from the replay: the critical path, the ideal executor count and the runtime at N executors.

The questions Sparklens answers, on the same model (``analysis.impact.replay``). Runtimes at other executor counts
are the actual runtime plus the replay's difference between that count and the run's own (docs/IMPACT.md): what
the replay does not model is assumed to stay as it was, so the estimate at the run's own count is its actual
runtime, and ``replay_error`` says how far the replay alone was from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from analysis.impact.replay import Workload, critical_path_ms, simulate

# The what-if points, as shares of the run's own executor count (Sparklens' set thinned: each point replays every
# task, and the curve is drawn, not read point by point).
CURVE_SHARES: Final = (0.25, 0.5, 1.0, 2.0, 4.0)
# The search for the ideal count stops when its interval is this share of the count or narrower.
IDEAL_PRECISION: Final = 0.1
# The ideal count is the fewest executors whose runtime is within this share of the best the replay finds.
IDEAL_TOLERANCE: Final = 0.10
# How far beyond the run's own count the search for the ideal count looks (and never past one executor per
# `cores` tasks of the widest stage, where more executors cannot help).
IDEAL_SEARCH_FACTOR: Final = 8


@dataclass(frozen=True, slots=True)
class WhatIf:
    own_executors: int
    cores: int
    actual_ms: float
    replayed_ms: float  # the replay at the run's own count, uncorrected
    replay_error: float | None  # (replayed - actual) / actual; None when the actual runtime is unknown
    critical_path_ms: float  # the runtime with unlimited executors (replay terms, corrected like the curve)
    ideal_executors: int
    runtime_ms_at: dict[int, float]  # executors -> estimated runtime

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract's ``what_if`` (keys of ``runtime_ms_at`` are strings, as JSON needs)."""
        return {
            "own_executors": self.own_executors,
            "cores_per_executor": self.cores,
            "critical_path_ms": round(self.critical_path_ms),
            "ideal_executors": self.ideal_executors,
            "runtime_ms_at": {str(n): round(ms) for n, ms in sorted(self.runtime_ms_at.items())},
            "replay_error": None if self.replay_error is None else round(self.replay_error, 4),
        }


def what_if(workload: Workload, simulate_at: Callable[[int], float] | None = None) -> WhatIf:
    """The what-if answers for one workload; ``simulate_at`` replaces the replay (tests)."""
    replay = simulate_at or (lambda n: simulate(workload, n))
    own = max(1, workload.executors)
    cache: dict[int, float] = {}

    def at(n: int) -> float:
        if n not in cache:
            cache[n] = replay(n)
        return cache[n]

    replayed = at(own)
    actual = workload.actual_ms if workload.actual_ms > 0 else replayed
    error = (replayed - workload.actual_ms) / workload.actual_ms if workload.actual_ms > 0 else None

    def estimate(n: int) -> float:
        return corrected(at(n), replayed, actual)

    widest = max((len(s.task_ms) for g in workload.groups for s in g.stages), default=1)
    useful = max(own, min(own * IDEAL_SEARCH_FACTOR, math.ceil(widest / max(1, workload.cores))))
    best = estimate(useful)

    def good(n: int) -> bool:
        return estimate(n) <= best * (1 + IDEAL_TOLERANCE)

    points = {max(1, round(own * share)) for share in CURVE_SHARES} | {own, max(1, own // 2), own * 2}
    # The search starts between the curve's points, which are replayed anyway: the fewest good count lies above
    # the largest point below it that is not good (the runtime falls with more executors, give or take noise).
    high = min((n for n in points if n <= useful and good(n)), default=useful)
    low = max((n + 1 for n in points if n < high and not good(n)), default=1)
    ideal = _fewest(good, low, high, IDEAL_PRECISION)
    curve = {n: estimate(n) for n in sorted(points | {ideal})}
    critical = corrected(critical_path_ms(workload), replayed, actual)
    return WhatIf(
        own_executors=own,
        cores=workload.cores,
        actual_ms=actual,
        replayed_ms=replayed,
        replay_error=error,
        critical_path_ms=min(critical, min(curve.values(), default=critical)),
        ideal_executors=ideal,
        runtime_ms_at=curve,
    )


def corrected(value: float, replayed: float, actual: float) -> float:
    """A replayed time corrected by what the replay missed at the run's own count: what the replay did not see
    (scheduler delay, executor start-up) is added as it was when the replay came out short; when it came out long,
    its times are scaled down by the same share, so no estimate can go below zero."""
    if replayed <= 0 or actual <= 0:
        return value
    if replayed <= actual:
        return actual + value - replayed
    return value * actual / replayed


def _fewest(good: Callable[[int], bool], low: int, high: int, precision: float = 0.0) -> int:
    """The smallest n in [low, high] for which ``good`` holds, by binary search (``good(high)`` is assumed), to
    within ``precision`` of n (the answer is then the upper end: a count that is known to be good)."""
    while low < high and high - low > precision * high:
        middle = (low + high) // 2
        if good(middle):
            high = middle
        else:
            low = middle + 1
    return high
