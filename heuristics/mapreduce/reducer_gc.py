from __future__ import annotations

from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.mapreduce._gc import GcBase
from heuristics.registry import register


@register
class ReducerGc(GcBase):
    """Reducers spend a large share of their CPU time in garbage collection.

    What it measures:
        Over the succeeded reduce tasks with counters: the average GC time (GC_TIME_MILLIS) / the average CPU
        time (CPU_MILLISECONDS). The severity of that ratio is capped by the severity of the average task run
        time (runtime_min): a high share of a few seconds costs little.

    Why it matters:
        Time in GC is time not spent on your records. Reducers hold shuffled map output in memory while they
        merge it, and a reducer that collects a key's values into a list can grow without bound; a high GC
        share is the first sign, OutOfMemoryError the next.

    What to change:
        Raise the reduce heap (the -Xmx in mapreduce.reduce.java.opts, with mapreduce.reduce.memory.mb above
        it), stream a key's values instead of collecting them, or shrink the in-memory shuffle
        (mapreduce.reduce.shuffle.input.buffer.percent).
        The changes: -Xmx in mapreduce.reduce.java.opts = the current heap (its -Xmx, else 80% of
        mapreduce.reduce.memory.mb, else the largest committed heap) x suggested_growth (1.5), rounded up to
        512 MiB, and mapreduce.reduce.memory.mb = that heap / 0.8, never below the current container.

    Differences from Dr. Elephant:
        Same formula and thresholds. Averages are not cut to whole milliseconds, tasks that logged no counters
        are left out (and said so) rather than counted as zeros, a zero CPU time with GC time gives an infinite
        ratio instead of a division error, and failed jobs are not judged, as in Dr. Elephant
        (mapreduce.exception reports them).
    """

    code = "mapreduce.reducer_gc"
    name = "Reducer GC"
    advice = "Give reducers more heap (-Xmx in mapreduce.reduce.java.opts) or stream values instead of collecting them."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.reduces
