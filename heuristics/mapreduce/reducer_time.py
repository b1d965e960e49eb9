from __future__ import annotations

import math

from appmodel.formatting import format_bytes, format_duration
from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.base import Change
from heuristics.mapreduce._time import TimeBase
from heuristics.mapreduce.common import MIN_MS, counted, mean, select_tasks
from heuristics.registry import register


@register
class ReducerTime(TimeBase):
    """Reducers are too short for how many there are, or too long.

    What it measures:
        The average run time of the succeeded reduce tasks, two ways. Too short: the average, judged
        lower-is-worse (short_runtime_min), capped by the number of reduce tasks (num_tasks), since a few short
        reducers cost nothing. Too long: the average judged higher-is-worse (long_runtime_min), not capped. The
        severity is the worse of the two.

    Why it matters:
        Too many reducers each start a container, fetch a sliver of every map's output and write a small output
        file (which the next job then has to read as many small files). Too few reducers make each one fetch,
        sort and process a huge share, so the job's tail is long and a failed reducer costs hours.

    What to change:
        Set mapreduce.job.reduces (Hive: hive.exec.reducers.bytes.per.reducer; Pig: PARALLEL) so that each
        reducer runs several minutes: fewer reducers when they are short, more when they are long.
        The change is mapreduce.job.reduces = ceil(the reduce input bytes / the bytes one reducer handles in
        target_runtime_min (12 minutes, between the short and long thresholds) at the observed pace), that is
        ceil(reducers x average run time / target); given only when it moves the way the finding asks.

    Differences from Dr. Elephant:
        Same formula and thresholds. The average is not cut to whole milliseconds, and failed jobs are not
        judged, as in Dr. Elephant.
    """

    code = "mapreduce.reducer_time"
    name = "Reducer time"
    short_advice = "Use fewer reducers (mapreduce.job.reduces) so each runs several minutes."
    long_advice = "Use more reducers (mapreduce.job.reduces) so each handles less data."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.reduces

    def changes(self, app: MapReduceApp, phase: MRPhase, short: bool, avg_ms: float) -> list[Change]:
        reducers = counted(phase)
        target_ms = self.config.target_runtime_min * MIN_MS
        if not math.isfinite(target_ms):  # an infinite target: no size to suggest
            return []
        if avg_ms <= 0 or reducers <= 0:
            return []
        suggested = max(1, math.ceil(reducers * avg_ms / target_ms))
        if (suggested >= reducers) if short else (suggested <= reducers):
            return []
        rows = select_tasks(phase, counters=True, timed=False).rows
        per_reducer = mean(phase.tasks.reduce_shuffle_bytes[rows]) if rows.any() else 0.0
        pace = f"{format_bytes(per_reducer)} per reducer in {format_duration(avg_ms)}" if per_reducer else ""
        total = f"{format_bytes(per_reducer * reducers)} of reduce input" if per_reducer else f"{reducers} reducers"
        why = f"{total} at {format_duration(target_ms)} per reducer" + (f" ({pace})" if pace else "")
        return [Change("mapreduce.job.reduces", str(suggested), why)]
