from __future__ import annotations

import math

from appmodel.formatting import format_bytes, format_duration
from appmodel.mapreduce import MapReduceApp, MRPhase
from appmodel.units import MIB
from heuristics.base import Change
from heuristics.mapreduce._time import TimeBase
from heuristics.mapreduce.common import MIN_MS, mean, select_tasks
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
        The change scales each mapper's input to a run of target_runtime_min (12 minutes: between the 10 at
        which short mappers are flagged and the 15 at which long ones are) at the pace the mappers ran: size =
        average input per mapper x target / average run time, in whole MiB, as
        mapreduce.input.fileinputformat.split.minsize (too short) or split.maxsize (too long), in bytes as
        Hadoop reads them. Dr. Elephant's help page gave the direction only; its thresholds are kept.

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

    def changes(self, app: MapReduceApp, phase: MRPhase, short: bool, avg_ms: float) -> list[Change]:
        rows = select_tasks(phase, counters=True, timed=False).rows
        avg_input = mean(phase.tasks.filesystem_bytes_read[rows]) if rows.any() else 0.0
        if avg_input <= 0 or avg_ms <= 0:
            return []
        target_ms = self.config.target_runtime_min * MIN_MS
        if not math.isfinite(target_ms):  # an infinite target: no size to suggest
            return []
        size = avg_input * target_ms / avg_ms
        mib = max(1, int(size // MIB) + (1 if short else 0))
        key = "mapreduce.input.fileinputformat.split." + ("minsize" if short else "maxsize")
        why = (
            f"{format_bytes(avg_input)} per mapper in {format_duration(avg_ms)}: "
            f"x {format_duration(target_ms)} / {format_duration(avg_ms)} = {format_bytes(mib * MIB)}"
        )
        return [Change(key, str(mib * MIB), why)]
