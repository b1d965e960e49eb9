from __future__ import annotations

from appmodel.formatting import format_bytes
from appmodel.mapreduce import MapReduceApp, MRPhase, MRTaskColumns
from heuristics.base import Change
from heuristics.mapreduce._skew import TaskSkewBase
from heuristics.mapreduce.common import Floats
from heuristics.registry import register


@register
class MapperSkew(TaskSkewBase):
    """Some mappers read much more data, or run much longer, than the others.

    What it measures:
        The succeeded map tasks are split into two groups by 2-means (group A the smaller values, group B the
        larger): once by the bytes each read from HDFS and S3, once by run time. The deviation is
        (average of B - average of A) / the smaller average. Data skew is the deviation's severity, capped by
        group B's average input in HDFS blocks (larger_group_blocks: skew among tiny splits does not matter)
        and by how many tasks group A holds (num_tasks: a handful of tasks is not a pattern). Time skew is the
        time deviation, in seconds, capped by group A's size. The severity is the worse of the two.

    Why it matters:
        A map phase ends when its slowest mapper ends. When a few mappers read far more than the rest, usually
        because input files differ wildly in size or some files are not splittable (gzip), the cluster idles
        while they finish.

    What to change:
        Even out the input: combine small files (CombineFileInputFormat, or Hive's
        hive.input.format=CombineHiveInputFormat), store large files with a splittable codec (bzip2, or
        compressed container formats such as ORC, Parquet, Avro, SequenceFile) so they split, and bound split
        sizes with mapreduce.input.fileinputformat.split.minsize / split.maxsize.
        The change, from the data skew's groups: when the large mappers (group B) read more than an HDFS block
        on average, splits are larger than blocks (a high split.minsize, or unsplittable files), so
        mapreduce.input.fileinputformat.split.maxsize = the block size (dfs.blocksize) in bytes; otherwise the
        small mappers (group A) are small files, and the change is to combine them (not a setting), named with
        their count and average input.

    Differences from Dr. Elephant:
        Dr. Elephant divided integers: the deviation of averages 100 and 250 was 1, not 1.5, and time averages
        were first cut to whole seconds; Hindsight divides in floating point, so fractional thresholds work.
        Dr. Elephant's 2-means set each new split point at avg(B) - avg(A) instead of their midpoint, which can
        put every task in one group; Hindsight uses the midpoint. The HDFS block size comes from the job's own
        dfs.blocksize (default_block_size_mib, 64 MiB as Dr. Elephant's fallback, when the conf lacks it), not
        from the analyzing server. The score is severity x tasks for the reported severity (Dr. Elephant scored
        the data severity only, so a time-skewed job reported SEVERE with a score of 0). Failed jobs are not
        judged, as in Dr. Elephant; mapreduce.exception reports them.
    """

    code = "mapreduce.mapper_skew"
    name = "Mapper skew"
    data_label = "input"
    advice = (
        "Even out map input: combine small files, store big ones splittable, bound the split size "
        "(mapreduce.input.fileinputformat.split.minsize / maxsize)."
    )

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.maps

    def data_bytes(self, tasks: MRTaskColumns) -> Floats:
        return tasks.filesystem_bytes_read.astype("float64")

    def changes(self, groups: tuple[int, float, int, float], block: float) -> list[Change]:
        count_a, avg_a, count_b, avg_b = groups
        if not count_a or not count_b:
            return []
        if avg_b > block:
            why = f"{count_b} mappers read {format_bytes(avg_b)} on average, more than a {format_bytes(block)} block"
            return [Change("mapreduce.input.fileinputformat.split.maxsize", str(int(block)), why)]
        why = "CombineFileInputFormat (Hive: hive.input.format=CombineHiveInputFormat) packs small files per split"
        return [Change("combine small input files", f"{count_a} mappers read {format_bytes(avg_a)} on average", why)]
