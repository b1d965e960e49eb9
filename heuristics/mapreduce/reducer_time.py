from __future__ import annotations

from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.mapreduce._time import TimeBase
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
