from __future__ import annotations

from appmodel.formatting import format_bytes
from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.mapreduce._time import TimeBase
from heuristics.mapreduce.common import mean, select_tasks
from heuristics.registry import register


@register
class MapperTime(TimeBase):
    """Mappers are too short for how many there are, or too long.

    What it measures:
        The average run time of the succeeded map tasks, two ways. Too short: the average, judged lower-is-worse
        (short_runtime_min), capped by the number of map tasks (num_tasks), since a few short mappers cost
        nothing. Too long: the average judged higher-is-worse (long_runtime_min), not capped. The severity is
        the worse of the two.

    Why it matters:
        Every mapper pays a fixed cost to start a JVM and a container; thousands of mappers of a few seconds
        each spend more time starting than working and flood the scheduler. Very long mappers make the job
        slow to finish, hold containers for hours and lose a lot of work when one fails.

    What to change:
        Too many short mappers: give each more input (combine small files with CombineFileInputFormat, raise
        mapreduce.input.fileinputformat.split.minsize). Too few long mappers: give each less input (lower
        mapreduce.input.fileinputformat.split.maxsize, make large files splittable).

    Differences from Dr. Elephant:
        Same formula and thresholds. Tasks are timed whether or not they logged counters (Dr. Elephant dropped
        tasks without counters from the average), the average is not cut to whole milliseconds, and failed jobs
        are not judged, as in Dr. Elephant.
    """

    code = "mapreduce.mapper_time"
    name = "Mapper time"
    short_advice = "Give each mapper more input: combine small files or raise the minimum split size."
    long_advice = "Give each mapper less input: lower the maximum split size or make large files splittable."

    def phase(self, app: MapReduceApp) -> MRPhase:
        return app.maps

    def extra_details(self, phase: MRPhase) -> list[tuple[str, str]]:
        rows = select_tasks(phase, counters=True, timed=False).rows
        if not rows.any():
            return []
        return [("Avg input size", format_bytes(mean(phase.tasks.filesystem_bytes_read[rows])))]
