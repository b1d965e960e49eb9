from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from appmodel.formatting import format_bytes, format_ratio
from appmodel.mapreduce import MapReduceApp
from appmodel.units import MIB
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.changes import advice_with, with_xmx
from heuristics.mapreduce.common import (
    MAPREDUCE,
    conf_int,
    counted,
    heap_bytes,
    judge_sides,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    ratio,
    select_tasks,
)
from heuristics.registry import register
from heuristics.severity import Ascending, Severity


@register
class MapperSpill(Heuristic["MapperSpill.Config"]):
    """Mappers write their output records to disk more than once.

    What it measures:
        Over the succeeded map tasks with counters: total SPILLED_RECORDS / total MAP_OUTPUT_RECORDS. A ratio of
        1 means each record went to disk once, as it must; 2 or more means the sort buffer filled up and spills
        were merged again on disk. The severity is capped by the number of map tasks (num_tasks).

    Why it matters:
        Every extra spill writes and re-reads all of a mapper's output through the local disk; for mappers with
        large output that is most of their run time and a heavy load on the nodes' disks.

    What to change:
        Give the sort buffer room for the whole output: raise mapreduce.task.io.sort.mb (and the map heap with
        it), raise mapreduce.map.sort.spill.percent, shrink the output with a Combiner or map-output compression
        (mapreduce.map.output.compress), or give each mapper less input.
        The changes: mapreduce.task.io.sort.mb = what a mapper's output needs to fit the buffer once, for 9 in
        10 mappers: the 90th percentile of (MAP_OUTPUT_BYTES + 16 bytes of accounting per record) /
        mapreduce.map.sort.spill.percent (0.8 unless set), in whole MiB; the map heap (-Xmx in
        mapreduce.map.java.opts, when set) grows by as much. Hadoop refuses a buffer of 2048 MiB or more: when
        the need is larger, io.sort.mb = 2047 and mapreduce.input.fileinputformat.split.maxsize = the 90th
        percentile input per mapper x 2047 / the need, so each mapper's output fits.

    Differences from Dr. Elephant:
        Same ratio and thresholds (2.01, 2.2, 2.5, 3.0). Dr. Elephant scaled the ratio by 10,000 and truncated
        it to an integer; Hindsight compares the ratio itself, which differs only within 0.0001 below a
        threshold. Spills with no output records give an infinite ratio instead of a division error; tasks that
        logged no counters are left out with a note; failed jobs are not judged, as in Dr. Elephant.
    """

    code = "mapreduce.mapper_spill"
    name = "Mapper spill"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        spill_ratio: Ascending  # total spilled records / total map output records
        num_tasks: Ascending  # map tasks in the job; caps the ratio's severity

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        phase = app.maps
        selection = select_tasks(phase, counters=True, timed=False)
        if not selection.count:
            return no_tasks(self, phase, selection, "counters")
        rows = selection.rows
        spilled = int(phase.tasks.spilled_records[rows].sum())
        output = int(phase.tasks.map_output_records[rows].sum())
        spill_ratio = ratio(spilled, output)
        num_tasks = counted(phase)
        observed: Observed = {"tasks": num_tasks, "spilled_records": spilled, "output_records": output}
        severity, _ = judge_sides(self, observed, [{"spill_ratio": spill_ratio, "num_tasks": float(num_tasks)}])
        details = [
            ("Number of tasks", str(num_tasks)),
            ("Spilled records", f"{spilled:,}"),
            ("Output records", f"{output:,}"),
            ("Spilled / output records", format_ratio(spill_ratio, 3)),
            *selection.notes,
        ]
        changes = self._changes(app, rows) if severity > Severity.NONE else []
        return self.result(
            severity,
            counted=num_tasks,
            details=details,
            advice=advice_with(
                "Raise mapreduce.task.io.sort.mb (with the heap), add a Combiner or compress map output", changes
            ),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )

    @staticmethod
    def _changes(app: MapReduceApp, rows: npt.NDArray[np.bool_]) -> list[Change]:
        tasks = app.maps.tasks
        output = tasks.map_output_bytes[rows].astype(np.float64) + 16.0 * tasks.map_output_records[rows]
        if not output.size or output.max() <= 0:
            return []
        percent_raw = app.conf_value("mapreduce.map.sort.spill.percent")
        try:
            percent = float(percent_raw) if percent_raw else 0.8
        except ValueError:
            percent = 0.8
        percent = percent if 0 < percent <= 1 else 0.8
        current = conf_int(app, ("mapreduce.task.io.sort.mb", "io.sort.mb"), [])
        current_mb = current[1] if current else 100  # Hadoop's default
        need_mb = math.ceil(float(np.percentile(output, 90)) / percent / MIB)
        if need_mb <= current_mb:
            return []
        sort_mb = min(need_mb, 2047)
        why = f"9 in 10 mappers wrote up to {format_bytes(need_mb * percent * MIB)} / spill percent {percent:g}"
        changes = [Change("mapreduce.task.io.sort.mb", str(sort_mb), why)]
        xmx, _ = heap_bytes(app, app.maps)
        if xmx:
            opts = app.conf_value("mapreduce.map.java.opts") or app.conf_value("mapred.child.java.opts")
            grown = xmx + (sort_mb - current_mb) * MIB
            why = f"the heap holds the sort buffer: +{sort_mb - current_mb} MiB"
            changes.append(Change("mapreduce.map.java.opts", with_xmx(opts, grown), why))
        if need_mb > 2047:
            read = float(np.percentile(tasks.filesystem_bytes_read[rows], 90))
            split = max(MIB, int(read * 2047 / need_mb) // MIB * MIB)
            why = f"2047 MiB is the largest buffer: {format_bytes(read)} of input x 2047 / {need_mb} MiB"
            changes.append(Change("mapreduce.input.fileinputformat.split.maxsize", str(split), why))
        return changes
