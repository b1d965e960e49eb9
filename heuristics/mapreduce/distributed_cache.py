from __future__ import annotations

from appmodel.formatting import format_bytes
from appmodel.mapreduce import MapReduceApp
from appmodel.units import MIB
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.mapreduce.common import MAPREDUCE
from heuristics.registry import register
from heuristics.severity import Severity

# (what, files key, sizes key), newest names first; Hadoop 1 used the mapred.* names.
CACHE_KEYS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "files",
        ("mapreduce.job.cache.files", "mapred.cache.files"),
        (
            "mapreduce.job.cache.files.filesizes",
            "mapred.cache.files.filesizes",
        ),
    ),
    (
        "archives",
        ("mapreduce.job.cache.archives", "mapred.cache.archives"),
        (
            "mapreduce.job.cache.archives.filesizes",
            "mapred.cache.archives.filesizes",
        ),
    ),
)


def first_set(app: MapReduceApp, keys: tuple[str, ...]) -> tuple[str, str] | None:
    for key in keys:
        value = app.conf_value(key)
        if value is not None and value.strip():
            return key, value
    return None


def split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",")]


@register
class DistributedCache(Heuristic["DistributedCache.Config"]):
    """The job ships very large files or archives through the distributed cache.

    What it measures:
        The files and archives the job put in the distributed cache (mapreduce.job.cache.files and
        mapreduce.job.cache.archives) and their sizes, which Hadoop records alongside
        (mapreduce.job.cache.files.filesizes, mapreduce.job.cache.archives.filesizes). Any file or archive
        larger than file_size_limit_mib is CRITICAL; a list of sizes that does not match the list of files is
        MODERATE, since the sizes cannot be trusted.

    Why it matters:
        Every node that runs one of the job's tasks downloads every cached file before the task starts, and
        keeps it in its local cache. A large cached file multiplies network and disk traffic by the number of
        nodes, delays every task's start, and evicts other jobs' cached files.

    What to change:
        Ship less: put large lookup data in HDFS and read only what a task needs, use a map-side join over
        partitioned data instead of a broadcast copy, trim fat jars (no bundled Hadoop), and compress archives.
        The change is not a setting: ship less through the cache, named with the largest cached file's size
        against the limit.

    Differences from Dr. Elephant:
        Dr. Elephant read its limit from a key that did not match the one its shipped configuration set
        (the code read distributed.cache.file.size.limit, the XML set ...limit.bytes = 500000000, which was
        ignored), so its 500 MiB code default always applied; Hindsight has one key, file_size_limit_mib,
        and an unknown key stops start-up. When the files list and sizes list differed in length, Dr.
        Elephant returned at once, so its archive check and size check were unreachable for that job;
        Hindsight still checks every size given and the archives. It also reads the Hadoop 1 mapred.cache.*
        names, says when a size is not a number (Dr. Elephant counted it as 0 silently), and judges failed
        jobs too, since what a job shipped does not depend on how it ended. The score is 0, as in Dr. Elephant.
    """

    code = "mapreduce.distributed_cache"
    name = "Distributed cache"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        file_size_limit_mib: NonNegative  # a cached file or archive larger than this is CRITICAL; 0: any non-empty one

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        limit = self.config.file_size_limit_mib * MIB
        details: list[tuple[str, str]] = []
        observed: Observed = {"limit_bytes": limit}
        severity = Severity.NONE
        largest = 0
        checked = 0
        for what, file_keys, size_keys in CACHE_KEYS:
            files_setting, sizes_setting = first_set(app, file_keys), first_set(app, size_keys)
            if files_setting is None and sizes_setting is None:
                continue
            files = split_list(files_setting[1]) if files_setting else []
            sizes = split_list(sizes_setting[1]) if sizes_setting else []
            if len(files) != len(sizes):
                severity = max(severity, Severity.MODERATE)
                details.append(
                    (
                        f"Cache {what}",
                        f"{len(files)} listed but {len(sizes)} sizes recorded: the sizes cannot be paired",
                    )
                )
            for position, raw in enumerate(sizes):
                name = files[position] if len(files) == len(sizes) else f"{what[:-1]} #{position + 1}"
                try:
                    size = int(raw)
                except ValueError:
                    details.append(("Warning", f"size {raw[:40]!r} of cached {name[:200]} is not a number; ignored"))
                    continue
                checked += 1
                largest = max(largest, size)
                if size > limit:
                    severity = Severity.CRITICAL
                    details.append((name[:300], f"{format_bytes(size)} (over {format_bytes(limit)})"))
        observed["largest_bytes"] = largest
        observed["cached"] = checked
        if not details and checked == 0:
            return self.no_finding(("Distributed cache", "the job cached no files or archives"), **observed)
        details[:0] = [("Cached files and archives", str(checked)), ("Largest", format_bytes(largest))]
        changes = []
        if severity:
            value = f"largest {format_bytes(largest)}, limit {format_bytes(limit)}"
            why = "every task's node downloads each cached file: read large data from HDFS, trim jars, compress"
            changes.append(Change("ship less through the distributed cache", value, why))
        return self.result(
            severity,
            counted=0,
            details=details,
            advice="Ship less through the distributed cache: read large data from HDFS, trim jars, compress.",
            changes=changes,
            observed=observed,
        )
