from __future__ import annotations

from appmodel.formatting import format_bytes
from appmodel.mapreduce import MapReduceApp, MRPhase, MRTaskColumns
from heuristics.base import Change
from heuristics.mapreduce._skew import TaskSkewBase
from heuristics.mapreduce.common import Floats
from heuristics.registry import register


@register
class ReducerSkew(TaskSkewBase):
    """Some reducers receive much more shuffled data, or run much longer, than the others.

    What it measures:
        The succeeded reduce tasks are split into two groups by 2-means (group A the smaller values, group B the
        larger): once by the bytes each fetched in the shuffle (REDUCE_SHUFFLE_BYTES), once by run time. The
        deviation is (average of B - average of A) / the smaller average. Data skew is the deviation's
        severity, capped by group B's average shuffle data in HDFS blocks (larger_group_blocks) and by how many
        tasks group A holds (num_tasks). Time skew is the time deviation, in seconds, capped by group A's size.
        The severity is the worse of the two.

    Why it matters:
        All records of a key go to one reducer. When a few keys are hot, or the partitioner maps many keys to
        the same reducer, those reducers fetch, sort and process far more than the rest, and the job waits for
        them; they are also the ones that spill and run out of memory.

    What to change:
        Find the hot keys and spread them: a custom Partitioner, salting hot keys and merging in a second step,
        a Combiner to shrink map output before the shuffle, or (Hive) hive.groupby.skewindata=true and
        hive.optimize.skewjoin=true.
        The change is not a setting: salt the hot keys, named with the large reducers' (group B's) count and
        average shuffle input against the others'.

    Differences from Dr. Elephant:
        Dr. Elephant divided integers: the deviation of averages 100 and 250 was 1, not 1.5, and time averages
        were first cut to whole seconds; Hindsight divides in floating point, so fractional thresholds work.
        Dr. Elephant's 2-means set each new split point at avg(B) - avg(A) instead of their midpoint, which can
        put every task in one group; Hindsight uses the midpoint. The HDFS block size comes from the job's own
        dfs.blocksize (default_block_size_mib, 64 MiB as Dr. Elephant's fallback, when the conf lacks it), not
        from the analyzing server. The score is severity x tasks for the reported severity (Dr. Elephant scored
        the data severity only). Failed jobs are not judged, as in Dr. Elephant; mapreduce.exception reports
        them.
    """

    code = "mapreduce.reducer_skew"
    name = "Reducer skew"
    data_label = "shuffle"
    advice = "Spread hot keys: a better Partitioner, salted keys, or a Combiner to shrink map output."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.reduces

    def data_bytes(self, tasks: MRTaskColumns) -> Floats:
        return tasks.reduce_shuffle_bytes.astype("float64")

    def changes(self, groups: tuple[int, float, int, float], block: float) -> list[Change]:
        count_a, avg_a, count_b, avg_b = groups
        if not count_a or not count_b:
            return []
        value = f"{count_b} reducers got {format_bytes(avg_b)} on average, the other {count_a} {format_bytes(avg_a)}"
        why = "a hot key lands on one reducer: a random salt (or a custom Partitioner) spreads it, a second step merges"
        return [Change("salt the hot reduce keys", value, why)]
