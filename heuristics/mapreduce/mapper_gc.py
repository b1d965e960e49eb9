from __future__ import annotations

from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.mapreduce._gc import GcBase
from heuristics.registry import register


@register
class MapperGc(GcBase):
    """Mappers spend a large share of their CPU time in garbage collection.

    What it measures:
        Over the succeeded map tasks with counters: the average GC time (GC_TIME_MILLIS) / the average CPU
        time (CPU_MILLISECONDS). The severity of that ratio is capped by the severity of the average task run
        time (runtime_min): a high share of a few seconds costs little.

    Why it matters:
        Time in GC is time not spent on your records. A high share means the map heap is too small for what
        the mapper holds (in-memory caches, a large sort buffer, big records), and it often precedes
        OutOfMemoryError and failed attempts.

    What to change:
        Raise the map heap (the -Xmx in mapreduce.map.java.opts, with mapreduce.map.memory.mb above it), hold
        less in memory in the mapper, or lower mapreduce.task.io.sort.mb if the sort buffer crowds the heap.
        The changes: -Xmx in mapreduce.map.java.opts = the current heap (its -Xmx, else 80% of
        mapreduce.map.memory.mb, else the largest committed heap) x suggested_growth (1.5), rounded up to 512 MiB,
        and mapreduce.map.memory.mb = that heap / 0.8 (Hadoop's heap-to-container ratio), never below the
        current container.

    Differences from Dr. Elephant:
        Same formula and thresholds. Averages are not cut to whole milliseconds, tasks that logged no counters
        are left out (and said so) rather than counted as zeros, a zero CPU time with GC time gives an infinite
        ratio instead of a division error, and failed jobs are not judged, as in Dr. Elephant
        (mapreduce.exception reports them).
    """

    code = "mapreduce.mapper_gc"
    name = "Mapper GC"
    advice = "Give mappers more heap (-Xmx in mapreduce.map.java.opts, with mapreduce.map.memory.mb above it)."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.maps
