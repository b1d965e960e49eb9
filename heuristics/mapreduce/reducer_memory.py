from __future__ import annotations

from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.mapreduce._memory import MemoryBase
from heuristics.registry import register


@register
class ReducerMemory(MemoryBase):
    """Reducers ask for much bigger containers than they use.

    What it measures:
        The average physical memory of the succeeded reduce tasks (PHYSICAL_MEMORY_BYTES, each task's largest
        snapshot) / the container memory the job asked for (mapreduce.reduce.memory.mb). Lower is worse. The
        severity is capped by how big the container is, as a multiple of container_memory_default_mb
        (container_memory): asking for about the cluster's usual size wastes little, whatever the ratio.

    Why it matters:
        YARN reserves the whole container for the task's lifetime. Memory asked for and not used is memory no
        other task can have, so fewer tasks run at once on the cluster.

    What to change:
        Lower mapreduce.reduce.memory.mb towards the peak the tasks need (with headroom), and the -Xmx in
        mapreduce.reduce.java.opts with it (about 75-80% of the container).
        The changes: mapreduce.reduce.memory.mb = the largest task's physical memory x headroom (1.2), rounded up
        to 512 MiB (never below that peak), and -Xmx in mapreduce.reduce.java.opts = 80% of it (Hadoop's
        mapreduce.job.heap.memory-mb.ratio), never below the largest committed heap (the container grows to
        heap / 0.8 if that is larger). Dr. Elephant's help page gave the direction only, no value.

    Differences from Dr. Elephant:
        Same formula and code defaults: the container cap is 1.1 / 1.5 / 2 / 2.5 x 2048 MB as Dr. Elephant's
        code has it (its shipped XML comment says 1, which was never applied). The container size is read
        from the job conf with every ${var} resolved, not only one level. A conf without the key, or with -1
        (Hadoop 3 derives it from the heap), gives NONE with a note instead of an error; tasks that logged no
        physical memory are left out rather than averaged in as zeros. Failed jobs are not judged, as in
        Dr. Elephant.
    """

    code = "mapreduce.reducer_memory"
    name = "Reducer memory"
    conf_keys = ("mapreduce.reduce.memory.mb", "mapred.job.reduce.memory.mb")
    advice = "Lower mapreduce.reduce.memory.mb (and -Xmx in mapreduce.reduce.java.opts) towards what reducers use."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.reduces
